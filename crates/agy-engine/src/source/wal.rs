//! Replays a SQLite write-ahead log onto a database image in memory, as
//! SQLite's own WAL recovery does, so a snapshot with a `-wal` needs no copy
//! on disk.
//!
//! The format (sqlite.org/fileformat2.html §4, "The Write-Ahead Log"): a
//! 32-byte header (magic `0x377f0682`/`0x377f0683`, version 3007000, page
//! size, checkpoint sequence, two salts, a checksum of the first 24 bytes),
//! then frames of a 24-byte header (page number, database size in pages for
//! a commit frame or 0, the two salts, a cumulative checksum) and one page.
//! A frame is valid when its page number is not 0, its salts equal the
//! header's and its checksum (over the frame header's first 8 bytes and the
//! page, continuing from the previous frame's) matches; reading stops at the
//! first frame that is not. Only frames up to the last valid commit frame
//! count; the database then has that commit's page count.
//!
//! This reader only replays what it fully understands. A header SQLite
//! itself would reject or treat specially (bad magic, another version, an
//! invalid or mismatched page size, a bad header checksum) is
//! [`Replay::Defer`]: the caller lets SQLite replay the log from a private
//! copy on disk instead, so this module can never admit a state SQLite
//! would not read.

/// The result of replaying a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// The database image with every committed frame applied.
    Applied {
        image: Vec<u8>,
        /// Frames applied (up to and including the last commit frame).
        frames: usize,
    },
    /// No committed frame: the database bytes alone are the state.
    NothingCommitted,
    /// A log this reader does not replay itself; the reason.
    Defer(&'static str),
}

const MAGIC_LE: u32 = 0x377f_0682;
const MAGIC_BE: u32 = 0x377f_0683;
const VERSION: u32 = 3_007_000;
const HEADER: usize = 32;
const FRAME_HEADER: usize = 24;

fn be32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(w)
}

/// SQLite's WAL checksum over `data` (a multiple of 8 bytes), continuing
/// from `(s1, s2)`; words are big-endian when `big` (magic `...683`).
fn checksum(big: bool, data: &[u8], mut s1: u32, mut s2: u32) -> (u32, u32) {
    for pair in data.chunks_exact(8) {
        let (a, b) = if big {
            (be32(pair, 0), be32(pair, 4))
        } else {
            (
                u32::from_le_bytes([pair[0], pair[1], pair[2], pair[3]]),
                u32::from_le_bytes([pair[4], pair[5], pair[6], pair[7]]),
            )
        };
        s1 = s1.wrapping_add(a).wrapping_add(s2);
        s2 = s2.wrapping_add(b).wrapping_add(s1);
    }
    (s1, s2)
}

/// The database's page size from its header (offset 16; 1 means 65536).
fn db_page_size(main: &[u8]) -> Option<usize> {
    let raw = u16::from_be_bytes([*main.get(16)?, *main.get(17)?]) as usize;
    let size = if raw == 1 { 65_536 } else { raw };
    (size.is_power_of_two() && (512..=65_536).contains(&size)).then_some(size)
}

/// What a log holds past its last commit frame: frames SQLite ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tail {
    /// Valid frames written after the last commit (an unfinished transaction).
    pub uncommitted: usize,
    /// Whole frames past the valid ones (stale frames of an earlier log
    /// generation, or a frame that fails its checksum and what follows it).
    pub invalid: usize,
    /// Bytes of a partial last frame (a torn write).
    pub torn_bytes: usize,
    /// The 0-based number of a frame the checksums prove damaged: it fails
    /// its own checksum although the next frame of the same log generation
    /// chains correctly from the checksum it carries, so it was altered after
    /// it was written, not cut short by a crash.
    pub damaged_frame: Option<usize>,
}

impl Tail {
    /// Frames SQLite does not apply.
    pub fn ignored(&self) -> usize {
        self.uncommitted + self.invalid
    }
}

/// A log's bytes, read at an offset: the log in memory, or its file read
/// frame by frame (a multi-gigabyte `-wal` is never held whole: only its
/// frame offsets are kept, and the pages they hold read when needed).
pub trait LogBytes {
    /// The log's length in bytes.
    fn len(&self) -> u64;
    /// Whether the log holds no byte.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fills `buf` from `off` (the caller keeps `off + buf.len() <= len()`).
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

impl LogBytes for [u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let from = usize::try_from(off)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(buf.len())?))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(from);
        Ok(())
    }
}

impl LogBytes for std::fs::File {
    fn len(&self) -> u64 {
        self.metadata().map_or(0, |m| m.len())
    }
    fn read_at(&self, off: u64, buf: &mut [u8]) -> std::io::Result<()> {
        read_exact_at(self, buf, off)
    }
}

#[cfg(unix)]
pub(crate) fn read_exact_at(f: &std::fs::File, buf: &mut [u8], off: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, off)
}

#[cfg(windows)]
pub(crate) fn read_exact_at(
    f: &std::fs::File,
    buf: &mut [u8],
    mut off: u64,
) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = std::os::windows::fs::FileExt::seek_read(f, &mut buf[done..], off)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
        off += n as u64;
    }
    Ok(())
}

/// The header of a log this module reads itself: byte order, page size and
/// the header's checksum (the chain's start); the reason otherwise.
struct Header {
    big: bool,
    page: usize,
    salts: [u8; 8],
    sums: (u32, u32),
}

fn header(
    page_size: Option<usize>,
    log: &(impl LogBytes + ?Sized),
) -> std::io::Result<Result<Header, &'static str>> {
    if log.len() < HEADER as u64 {
        // SQLite ignores a log shorter than its header
        return Ok(Err("log shorter than its header"));
    }
    let mut h = [0u8; HEADER];
    log.read_at(0, &mut h)?;
    let big = match be32(&h, 0) {
        MAGIC_BE => true,
        MAGIC_LE => false,
        _ => return Ok(Err("unknown log magic")),
    };
    if be32(&h, 4) != VERSION {
        return Ok(Err("unknown log version"));
    }
    let page = be32(&h, 8) as usize;
    if !(page.is_power_of_two() && (512..=65_536).contains(&page)) {
        return Ok(Err("invalid log page size"));
    }
    if page_size != Some(page) {
        return Ok(Err("log page size differs from the database's"));
    }
    let sums = checksum(big, &h[..24], 0, 0);
    if sums != (be32(&h, 24), be32(&h, 28)) {
        return Ok(Err("log header checksum mismatch"));
    }
    let mut salts = [0u8; 8];
    salts.copy_from_slice(&h[16..24]);
    Ok(Ok(Header {
        big,
        page,
        salts,
        sums,
    }))
}

/// Whether frame `f` (header and page) is valid after the chain `(s1, s2)`:
/// its new chain when it is.
fn frame_chains(hd: &Header, f: &[u8], (s1, s2): (u32, u32)) -> Option<(u32, u32)> {
    if be32(f, 0) == 0 || f[8..16] != hd.salts {
        return None;
    }
    let c = checksum(hd.big, &f[..8], s1, s2);
    let c = checksum(hd.big, &f[FRAME_HEADER..], c.0, c.1);
    (c == (be32(f, 16), be32(f, 20))).then_some(c)
}

/// Reads what a log holds past its last commit (`None` for a log this
/// module does not read itself: see [`Replay::Defer`]).
pub fn tail(main: &[u8], wal: &[u8]) -> Option<Tail> {
    tail_of(db_page_size(main), wal).ok().flatten()
}

/// [`tail`] of a log in memory or in its file, for a database of
/// `page_size`-byte pages.
pub fn tail_of(
    page_size: Option<usize>,
    wal: &(impl LogBytes + ?Sized),
) -> std::io::Result<Option<Tail>> {
    let Ok(hd) = header(page_size, wal)? else {
        return Ok(None);
    };
    let len = wal.len();
    let frame_len = (FRAME_HEADER + hd.page) as u64;
    let mut f = vec![0u8; FRAME_HEADER + hd.page];
    let mut g = vec![0u8; FRAME_HEADER + hd.page];
    let mut sums = hd.sums;
    let (mut at, mut valid, mut last_commit) = (HEADER as u64, 0usize, 0usize);
    let mut t = Tail::default();
    while at + frame_len <= len {
        wal.read_at(at, &mut f)?;
        match frame_chains(&hd, &f, sums) {
            Some(next) => sums = next,
            None => {
                // Does the next frame chain from the checksum this one carries?
                let next = at + frame_len;
                if be32(&f, 0) != 0 && f[8..16] == hd.salts && next + frame_len <= len {
                    wal.read_at(next, &mut g)?;
                    if frame_chains(&hd, &g, (be32(&f, 16), be32(&f, 20))).is_some() {
                        t.damaged_frame = Some(valid);
                    }
                }
                break;
            }
        }
        valid += 1;
        if be32(&f, 4) != 0 {
            last_commit = valid;
        }
        at += frame_len;
    }
    t.uncommitted = valid - last_commit;
    t.invalid = usize::try_from((len - at) / frame_len).unwrap_or(usize::MAX);
    t.torn_bytes = ((len - at) % frame_len) as usize;
    Ok(Some(t))
}

/// The committed frames of a log: where each committed page's newest
/// copy sits in the log, and the database's size in pages after the last
/// commit ([`committed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committed {
    /// Committed frames: (frame offset in the log, page number), in log
    /// order, up to and including the last commit frame; the page count.
    Frames {
        frames: Vec<(usize, u32)>,
        pages: u32,
    },
    /// No committed frame: the database bytes alone are the state.
    Nothing,
    /// A log this reader does not replay itself; the reason.
    Defer(&'static str),
}

/// The committed frames of `wal` for a database of `page_size`-byte pages
/// (SQLite's own rules: header magic, version and checksum, each frame's
/// salts and chained checksum; frames past the last commit are ignored).
pub fn committed(page_size: Option<usize>, wal: &[u8]) -> Committed {
    // reading a slice within its length cannot fail
    committed_of(page_size, wal).unwrap_or(Committed::Defer("log unreadable"))
}

/// [`committed`] of a log in memory or in its file: the frames are read
/// one at a time, and only their offsets kept.
pub fn committed_of(
    page_size: Option<usize>,
    wal: &(impl LogBytes + ?Sized),
) -> std::io::Result<Committed> {
    if wal.len() == 0 {
        return Ok(Committed::Nothing);
    }
    let hd = match header(page_size, wal)? {
        Ok(hd) => hd,
        Err(why) => return Ok(Committed::Defer(why)),
    };
    let len = wal.len();
    let frame_len = (FRAME_HEADER + hd.page) as u64;
    let mut f = vec![0u8; FRAME_HEADER + hd.page];
    let mut sums = hd.sums;
    // (frame offset, page number) of every valid frame, and the last commit
    let mut valid: Vec<(usize, u32)> = Vec::new();
    let mut commit: Option<(usize, u32)> = None;
    let mut at = HEADER as u64;
    while at + frame_len <= len {
        wal.read_at(at, &mut f)?;
        let Some(next) = frame_chains(&hd, &f, sums) else {
            break;
        };
        sums = next;
        let Ok(off) = usize::try_from(at) else {
            return Ok(Committed::Defer("log larger than this machine addresses"));
        };
        valid.push((off, be32(&f, 0)));
        let db_size = be32(&f, 4);
        if db_size != 0 {
            commit = Some((valid.len(), db_size));
        }
        at += frame_len;
    }
    let Some((frames, pages)) = commit else {
        return Ok(Committed::Nothing);
    };
    valid.truncate(frames);
    Ok(Committed::Frames {
        frames: valid,
        pages,
    })
}

/// The size in bytes of the pages of a database file (header bytes 16-17).
pub fn page_size(main: &[u8]) -> Option<usize> {
    db_page_size(main)
}

/// The byte offset of a page's copy inside a log frame.
pub const FRAME_DATA: usize = FRAME_HEADER;

/// Replays `wal` onto `main` (the database file's bytes).
pub fn replay(main: &[u8], wal: &[u8]) -> Replay {
    let mut image = main.to_vec();
    match replay_in_place(&mut image, wal) {
        InPlace::Applied { frames } => Replay::Applied { image, frames },
        InPlace::NothingCommitted => Replay::NothingCommitted,
        InPlace::Defer(why) => Replay::Defer(why),
    }
}

/// What [`replay_in_place`] did to the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InPlace {
    /// Every committed frame applied; the image is the replayed state.
    Applied { frames: usize },
    /// No committed frame: the image is untouched.
    NothingCommitted,
    /// A log this reader does not replay itself: the image is untouched.
    Defer(&'static str),
}

/// [`replay`] applied to the database bytes themselves instead of a copy
/// (the snapshot owns them and needs only the replayed state): the same
/// decisions, made before anything is written, so the image is changed
/// only when the answer is [`InPlace::Applied`], and then to exactly the
/// image [`replay`] returns.
pub fn replay_in_place(image: &mut Vec<u8>, wal: &[u8]) -> InPlace {
    let (valid, pages) = match committed(db_page_size(image), wal) {
        Committed::Nothing => return InPlace::NothingCommitted,
        Committed::Defer(why) => return InPlace::Defer(why),
        Committed::Frames { frames, pages } => (frames, pages),
    };
    // `committed` gave frames only for the database's own page size
    let Some(page) = db_page_size(image) else {
        return InPlace::Defer("log page size differs from the database's");
    };
    let frames = valid.len();
    let size = pages as usize * page;
    if size > image.len() + wal.len() {
        // more pages than the file and the log hold: SQLite decides
        return InPlace::Defer("commit size larger than the database and log");
    }
    for &(off, pgno) in &valid {
        if pgno > pages {
            // truncated away by the last commit
            continue;
        }
        let start = (pgno as usize - 1) * page;
        if image.len() < start + page {
            image.resize(start + page, 0);
        }
        image[start..start + page]
            .copy_from_slice(&wal[off + FRAME_HEADER..off + FRAME_HEADER + page]);
    }
    image.resize(size, 0);
    InPlace::Applied { frames }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `frames` (page number, commit size, page byte) in the given
    /// byte order, built with the same checksum as SQLite's writer.
    pub(super) fn log(big: bool, page: usize, frames: &[(u32, u32, u8)]) -> Vec<u8> {
        let mut w = Vec::new();
        w.extend_from_slice(&(if big { MAGIC_BE } else { MAGIC_LE }).to_be_bytes());
        w.extend_from_slice(&VERSION.to_be_bytes());
        w.extend_from_slice(&(page as u32).to_be_bytes());
        w.extend_from_slice(&0u32.to_be_bytes());
        w.extend_from_slice(&[0xa1, 0xa2, 0xa3, 0xa4, 0xb1, 0xb2, 0xb3, 0xb4]);
        let (mut s1, mut s2) = checksum(big, &w[..24], 0, 0);
        w.extend_from_slice(&s1.to_be_bytes());
        w.extend_from_slice(&s2.to_be_bytes());
        for &(pgno, commit, fill) in frames {
            let mut h = Vec::new();
            h.extend_from_slice(&pgno.to_be_bytes());
            h.extend_from_slice(&commit.to_be_bytes());
            let salts = w[16..24].to_vec();
            h.extend_from_slice(&salts);
            let body = vec![fill; page];
            (s1, s2) = checksum(big, &h[..8], s1, s2);
            (s1, s2) = checksum(big, &body, s1, s2);
            h.extend_from_slice(&s1.to_be_bytes());
            h.extend_from_slice(&s2.to_be_bytes());
            w.extend_from_slice(&h);
            w.extend_from_slice(&body);
        }
        w
    }

    fn db(page: usize, pages: usize) -> Vec<u8> {
        let mut d = vec![0u8; page * pages];
        d[..16].copy_from_slice(b"SQLite format 3\0");
        let raw = if page == 65_536 { 1 } else { page as u16 };
        d[16..18].copy_from_slice(&raw.to_be_bytes());
        d
    }

    fn applied(r: Replay) -> (Vec<u8>, usize) {
        match r {
            Replay::Applied { image, frames } => (image, frames),
            other => panic!("not applied: {other:?}"),
        }
    }

    #[test]
    fn committed_frames_are_applied_in_both_byte_orders() {
        for big in [false, true] {
            let main = db(512, 2);
            let wal = log(big, 512, &[(2, 0, 7), (3, 3, 8)]);
            let (image, frames) = applied(replay(&main, &wal));
            assert_eq!(frames, 2);
            assert_eq!(image.len(), 3 * 512);
            assert_eq!(&image[..16], b"SQLite format 3\0");
            assert!(image[512..1024].iter().all(|b| *b == 7));
            assert!(image[1024..].iter().all(|b| *b == 8));
        }
    }

    #[test]
    fn the_tail_tells_uncommitted_torn_and_damaged_frames_apart() {
        let (main, good) = sample_log();
        let t = tail(&main, &good).unwrap();
        assert_eq!(t, Tail::default(), "a clean log ignores nothing");
        // cut in the middle of the last frame: torn, not damaged
        let torn = &good[..good.len() - 100];
        let t = tail(&main, torn).unwrap();
        assert!(t.torn_bytes > 0 && t.damaged_frame.is_none(), "{t:?}");
        // a flipped byte inside the first frame's page: the second frame
        // still chains from the checksum the first one carries
        let mut flipped = good.clone();
        flipped[HEADER + FRAME_HEADER + 10] ^= 0x40;
        let t = tail(&main, &flipped).unwrap();
        assert_eq!(t.damaged_frame, Some(0), "{t:?}");
        assert!(t.ignored() >= 2, "{t:?}");
        // the failing frame is the last one: nothing proves more than a
        // torn write
        let mut last_flipped = good.clone();
        let n = last_flipped.len();
        last_flipped[n - 5] ^= 1;
        let t = tail(&main, &last_flipped).unwrap();
        assert_eq!(t.damaged_frame, None, "{t:?}");
        assert_eq!(t.invalid, 1, "{t:?}");
        // a frame after the last commit is uncommitted, not damage
        let open = log(false, 512, &[(2, 2, 7), (2, 0, 9)]);
        let t = tail(&main, &open).unwrap();
        assert_eq!((t.uncommitted, t.damaged_frame), (1, None), "{t:?}");
    }

    fn sample_log() -> (Vec<u8>, Vec<u8>) {
        (db(512, 2), log(false, 512, &[(2, 0, 7), (3, 3, 8)]))
    }

    #[test]
    fn frames_after_the_last_commit_are_ignored() {
        let main = db(512, 2);
        let wal = log(false, 512, &[(2, 2, 7), (2, 0, 9)]);
        let (image, frames) = applied(replay(&main, &wal));
        assert_eq!(frames, 1);
        assert!(image[512..].iter().all(|b| *b == 7));
        let only_uncommitted = log(false, 512, &[(2, 0, 9)]);
        assert_eq!(replay(&main, &only_uncommitted), Replay::NothingCommitted);
        assert_eq!(replay(&main, &[]), Replay::NothingCommitted);
    }

    #[test]
    fn a_later_frame_of_a_page_wins_and_commit_size_truncates() {
        let main = db(512, 4);
        let wal = log(false, 512, &[(2, 0, 1), (2, 0, 2), (1, 2, 0)]);
        let (image, _) = applied(replay(&main, &wal));
        assert_eq!(image.len(), 2 * 512);
        assert!(image[512..].iter().all(|b| *b == 2));
    }

    #[test]
    fn reading_stops_at_a_bad_checksum_salt_page_number_or_torn_frame() {
        let main = db(512, 2);
        let good = log(false, 512, &[(2, 2, 7), (2, 2, 8)]);
        let second = HEADER + FRAME_HEADER + 512;
        let mut bad_sum = good.clone();
        bad_sum[second + FRAME_HEADER + 5] ^= 1;
        let mut bad_salt = good.clone();
        bad_salt[second + 9] ^= 1;
        let mut zero_page = good.clone();
        zero_page[second..second + 4].copy_from_slice(&0u32.to_be_bytes());
        let torn = good[..good.len() - 1].to_vec();
        for wal in [bad_sum, bad_salt, zero_page, torn] {
            let (image, frames) = applied(replay(&main, &wal));
            assert_eq!(frames, 1);
            assert!(image[512..].iter().all(|b| *b == 7));
        }
    }

    #[test]
    fn unusual_headers_are_deferred_to_sqlite() {
        let main = db(512, 2);
        let good = log(false, 512, &[(2, 2, 7)]);
        let mut magic = good.clone();
        magic[3] = 0x84;
        let mut version = good.clone();
        version[7] ^= 1;
        let mut sum = good.clone();
        sum[25] ^= 1;
        let mut size = good.clone();
        size[8..12].copy_from_slice(&1000u32.to_be_bytes());
        for wal in [magic, version, sum, size, good[..20].to_vec()] {
            assert!(matches!(replay(&main, &wal), Replay::Defer(_)));
        }
        let huge = log(false, 512, &[(2, u32::MAX, 7)]);
        assert!(matches!(replay(&main, &huge), Replay::Defer(_)));
        let other_page = db(1024, 1);
        assert!(matches!(replay(&other_page, &good), Replay::Defer(_)));
    }

    /// The in-place replay leaves the bytes untouched unless it applies the
    /// log (a deferred log is then replayed by SQLite from those bytes), and
    /// when it does, they are exactly the image [`replay`] builds.
    #[test]
    fn in_place_replay_touches_the_bytes_only_when_it_applies() {
        let main = db(512, 2);
        let good = log(false, 512, &[(2, 2, 7)]);
        let mut magic = good.clone();
        magic[3] = 0x84;
        let huge = log(false, 512, &[(2, u32::MAX, 7)]);
        let uncommitted = log(false, 512, &[(2, 0, 9)]);
        for wal in [magic, huge, uncommitted, Vec::new()] {
            let mut image = main.clone();
            let r = replay_in_place(&mut image, &wal);
            assert!(!matches!(r, InPlace::Applied { .. }), "{r:?}");
            assert_eq!(image, main);
        }
        for wal in [
            good,
            log(false, 512, &[(2, 0, 1), (2, 0, 2), (1, 2, 0)]),
            log(false, 512, &[(3, 3, 8)]),
        ] {
            let mut image = main.clone();
            let InPlace::Applied { frames } = replay_in_place(&mut image, &wal) else {
                panic!("not applied");
            };
            assert_eq!(replay(&main, &wal), Replay::Applied { image, frames });
        }
    }
}
