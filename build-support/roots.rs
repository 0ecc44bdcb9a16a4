// Included by both build scripts (the reader's and agy-corpus's): the
// modeled schema's root files, listed once in `proto/roots.txt`.

/// The root files listed in `<dir>/roots.txt` (one path under `dir` a line;
/// blank lines and `#` comments skipped).
fn roots(dir: &str) -> Vec<String> {
    let path = format!("{dir}/roots.txt");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}
