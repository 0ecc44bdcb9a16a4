//! Stable shards: which of `n` shards a conversation belongs to, from its
//! file id alone, and `--shard auto` read from the job runner's environment.
//!
//! The assignment is `shard_of(fileId, n) = (u64::from_be_bytes(first 8
//! bytes of SHA-256(fileId as UTF-8)) mod n) + 1`: it depends on nothing but
//! the conversation's own file id, so adding or removing a conversation moves
//! no other one (a listing position would move every one after it). A
//! manifest records the assignment it used as `shardBy`
//! ([`SHARD_ASSIGNMENT`]); a shard manifest without it (written when shards
//! followed listing position) is refused by `--resume` and left incomplete
//! by `manifest merge`.

use sha2::{Digest, Sha256};

/// The assignment's name, recorded in a shard manifest as `shardBy`.
pub const SHARD_ASSIGNMENT: &str = "sha256-fileid";

/// The 1-based shard (of `n`, n >= 1) of the conversation `file_id`.
pub fn shard_of(file_id: &str, n: usize) -> usize {
    let digest = Sha256::digest(file_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let n = n.max(1) as u64;
    (u64::from_be_bytes(first) % n) as usize + 1
}

/// Whether `file_id` is in shard `i` of `n`.
pub fn in_shard(file_id: &str, (i, n): (usize, usize)) -> bool {
    shard_of(file_id, n) == i
}

/// Kubernetes Indexed Jobs: the pod's 0-based completion index.
pub const K8S_INDEX: &str = "JOB_COMPLETION_INDEX";
/// GitLab `parallel:` jobs: the 1-based node index and the node count.
pub const GITLAB_INDEX: &str = "CI_NODE_INDEX";
pub const GITLAB_TOTAL: &str = "CI_NODE_TOTAL";

/// Why `--shard auto` cannot name a shard from the environment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardEnvError {
    #[error("--shard auto: {name}={value:?} is not a whole number")]
    NotWhole { name: &'static str, value: String },
    #[error("--shard auto: {K8S_INDEX} is set (a Kubernetes Indexed Job) but --shard-count is not: pass the Job's completions as --shard-count")]
    K8sWithoutCount,
    #[error(
        "--shard auto: {K8S_INDEX}={index} is 0-based and must be below --shard-count {count}"
    )]
    K8sOutOfRange { index: usize, count: usize },
    #[error("--shard auto: {GITLAB_INDEX}={index} is 1-based and must be between 1 and {GITLAB_TOTAL}={total}")]
    GitlabOutOfRange { index: usize, total: usize },
    #[error("--shard auto: --shard-count {count} contradicts {GITLAB_TOTAL}={total}")]
    GitlabCountContradicts { count: usize, total: usize },
    #[error("--shard auto: {present} is set but {absent} is not")]
    GitlabHalf {
        present: &'static str,
        absent: &'static str,
    },
    #[error("--shard auto: no job runner's index in the environment ({K8S_INDEX} with --shard-count for a Kubernetes Indexed Job, or {GITLAB_INDEX} and {GITLAB_TOTAL} for GitLab); pass --shard i/n instead")]
    NoRunner,
    #[error("--shard auto: contradictory job runner variables: {a} names shard {i}/{n}, {b} names shard {j}/{m}")]
    Contradictory {
        a: &'static str,
        i: usize,
        n: usize,
        b: &'static str,
        j: usize,
        m: usize,
    },
}

fn whole(name: &'static str, value: &str) -> Result<usize, ShardEnvError> {
    value
        .trim()
        .parse::<usize>()
        .map_err(|_| ShardEnvError::NotWhole {
            name,
            value: value.to_string(),
        })
}

/// `--shard auto`: the shard `(i, n)` (1-based) the job runner's environment
/// names, `env` looking a variable up. Kubernetes Indexed Jobs set
/// [`K8S_INDEX`] (0-based; the count comes from `--shard-count`); GitLab sets
/// [`GITLAB_INDEX`] (1-based) and [`GITLAB_TOTAL`] (`--shard-count`, when
/// given, must agree). No variable, an index without its count, a value that
/// is not a whole number, an index out of range, or two runners naming
/// different shards is a usage error (the wording is silent on two runners
/// that agree: they are accepted, since they name one shard).
pub fn auto_shard(
    env: impl Fn(&str) -> Option<String>,
    count: Option<usize>,
) -> Result<(usize, usize), ShardEnvError> {
    let mut found: Vec<(&'static str, usize, usize)> = Vec::new();
    if let Some(v) = env(K8S_INDEX) {
        let index = whole(K8S_INDEX, &v)?;
        let n = count.ok_or(ShardEnvError::K8sWithoutCount)?;
        if index >= n {
            return Err(ShardEnvError::K8sOutOfRange { index, count: n });
        }
        found.push((K8S_INDEX, index + 1, n));
    }
    match (env(GITLAB_INDEX), env(GITLAB_TOTAL)) {
        (Some(i), Some(t)) => {
            let (i, t) = (whole(GITLAB_INDEX, &i)?, whole(GITLAB_TOTAL, &t)?);
            if t == 0 || i == 0 || i > t {
                return Err(ShardEnvError::GitlabOutOfRange { index: i, total: t });
            }
            if let Some(n) = count.filter(|n| *n != t) {
                return Err(ShardEnvError::GitlabCountContradicts { count: n, total: t });
            }
            found.push((GITLAB_INDEX, i, t));
        }
        (Some(_), None) => {
            return Err(ShardEnvError::GitlabHalf {
                present: GITLAB_INDEX,
                absent: GITLAB_TOTAL,
            })
        }
        (None, Some(_)) => {
            return Err(ShardEnvError::GitlabHalf {
                present: GITLAB_TOTAL,
                absent: GITLAB_INDEX,
            })
        }
        (None, None) => {}
    }
    match found.as_slice() {
        [] => Err(ShardEnvError::NoRunner),
        [(_, i, n)] => Ok((*i, *n)),
        [(a, i, n), (b, j, m), ..] if (i, n) != (j, m) => Err(ShardEnvError::Contradictory {
            a,
            i: *i,
            n: *n,
            b,
            j: *j,
            m: *m,
        }),
        [(_, i, n), ..] => Ok((*i, *n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn the_assignment_is_the_documented_hash() {
        // sha256("a") = ca978112ca1bbdca...; 0xca978112ca1bbdca mod 4 = 2.
        assert_eq!(shard_of("a", 4), 3);
        assert_eq!(shard_of("anything", 1), 1);
        for id in ["x", "y", "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6"] {
            let s = shard_of(id, 7);
            assert!((1..=7).contains(&s));
            assert_eq!(s, shard_of(id, 7));
            assert!(in_shard(id, (s, 7)));
        }
    }

    #[test]
    fn auto_reads_kubernetes_and_gitlab() {
        assert_eq!(auto_shard(env(&[(K8S_INDEX, "0")]), Some(4)), Ok((1, 4)));
        assert_eq!(auto_shard(env(&[(K8S_INDEX, "3")]), Some(4)), Ok((4, 4)));
        assert_eq!(
            auto_shard(env(&[(GITLAB_INDEX, "2"), (GITLAB_TOTAL, "5")]), None),
            Ok((2, 5))
        );
        assert_eq!(
            auto_shard(env(&[(GITLAB_INDEX, "2"), (GITLAB_TOTAL, "5")]), Some(5)),
            Ok((2, 5))
        );
    }

    #[test]
    fn auto_refuses_missing_and_contradictory_variables() {
        for (vars, count) in [
            (vec![], None),
            (vec![], Some(4)),
            (vec![(K8S_INDEX, "0")], None),
            (vec![(K8S_INDEX, "4")], Some(4)),
            (vec![(K8S_INDEX, "-1")], Some(4)),
            (vec![(K8S_INDEX, "one")], Some(4)),
            (vec![(GITLAB_INDEX, "1")], None),
            (vec![(GITLAB_TOTAL, "3")], None),
            (vec![(GITLAB_INDEX, "0"), (GITLAB_TOTAL, "3")], None),
            (vec![(GITLAB_INDEX, "4"), (GITLAB_TOTAL, "3")], None),
            (vec![(GITLAB_INDEX, "1"), (GITLAB_TOTAL, "3")], Some(4)),
            (
                vec![(K8S_INDEX, "0"), (GITLAB_INDEX, "2"), (GITLAB_TOTAL, "4")],
                Some(4),
            ),
        ] {
            assert!(
                auto_shard(env(&vars), count).is_err(),
                "{vars:?} {count:?} accepted"
            );
        }
        // Two runners naming the same shard name one shard.
        assert_eq!(
            auto_shard(
                env(&[(K8S_INDEX, "1"), (GITLAB_INDEX, "2"), (GITLAB_TOTAL, "4")]),
                Some(4)
            ),
            Ok((2, 4))
        );
    }
}
