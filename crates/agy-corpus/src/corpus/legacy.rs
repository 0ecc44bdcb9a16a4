//! Legacy `.pb` sealing: 12-byte nonce ‖ AES-256-GCM ciphertext ‖ 16-byte
//! tag, no additional authenticated data, under agy's fixed format key.

use super::CorpusError;
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};

/// The fixed format key agy distributes (public-format-facts §3).
pub const FORMAT_KEY: &[u8; 32] = b"safeCodeiumworldKeYsecretBalloon";

/// Seals `plaintext` with `nonce`.
pub fn seal(plaintext: &[u8], nonce: [u8; 12]) -> Result<Vec<u8>, CorpusError> {
    let cipher = Aes256Gcm::new(&(*FORMAT_KEY).into());
    let n = Nonce::from(nonce);
    let sealed = cipher
        .encrypt(&n, plaintext)
        .map_err(|_| CorpusError::Build("AES-GCM sealing failed".into()))?;
    let mut out = Vec::with_capacity(12 + sealed.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    Ok(out)
}

/// Opens a sealed file (the simulated daemon rewrites legacy sources with it).
pub fn open(sealed: &[u8]) -> Result<Vec<u8>, CorpusError> {
    if sealed.len() <= 28 {
        return Err(CorpusError::Build("sealed file too short".into()));
    }
    let cipher = Aes256Gcm::new(&(*FORMAT_KEY).into());
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&sealed[..12]);
    cipher
        .decrypt(&Nonce::from(nonce), &sealed[12..])
        .map_err(|_| CorpusError::Build("sealed file does not authenticate".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens() {
        let s = seal(b"\x0a\x01x", [5; 12]).unwrap();
        assert_eq!(s.len(), 12 + 3 + 16);
        assert_eq!(open(&s).unwrap(), b"\x0a\x01x");
        let mut bad = s.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(open(&bad).is_err());
    }
}
