//! The tolerant count of a JSON text's nesting: `[` and `{` outside
//! strings open a level, `]` and `}` close one (never below zero), a string
//! runs from a quote to the next quote not escaped by a backslash, and no
//! other rule of the grammar is checked. Resumable across chunks. What the
//! comparison's fast path bounds a subtree's depth with
//! (`compare::stream`), and what the answer reader goes on counting after
//! a syntax error, so a too-deep nesting later in the text still outranks
//! it (`answer::lex`).

/// Where the count stands between chunks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nesting {
    /// The open levels.
    pub depth: usize,
    /// The deepest level reached.
    pub max: usize,
    /// Inside a string…
    pub in_string: bool,
    /// …just after its backslash.
    pub escape: bool,
}

impl Nesting {
    /// Counts `bytes`; `Err(i)` at the first byte `i` that opens a level
    /// past `limit` (the count stops there).
    pub fn feed(&mut self, bytes: &[u8], limit: usize) -> Result<(), usize> {
        for (i, &c) in bytes.iter().enumerate() {
            if self.in_string {
                if self.escape {
                    self.escape = false;
                } else if c == b'\\' {
                    self.escape = true;
                } else if c == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            match c {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    self.max = self.max.max(self.depth);
                    if self.depth > limit {
                        return Err(i);
                    }
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }

    /// The deepest nesting of a whole text.
    pub fn deepest(text: &[u8]) -> usize {
        let mut n = Nesting::default();
        // No limit: the count runs to the end.
        let _ = n.feed(text, usize::MAX);
        n.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_containers_outside_strings_only() {
        assert_eq!(Nesting::deepest(br#"{"a":[1,{"b":"[[{"}]}"#), 3);
        assert_eq!(Nesting::deepest(br#""\"[""#), 0);
        assert_eq!(Nesting::deepest(b"]]]{"), 1);
        assert_eq!(Nesting::deepest(b""), 0);
    }

    #[test]
    fn stops_at_the_first_level_past_the_limit_and_resumes_across_chunks() {
        let mut n = Nesting::default();
        assert_eq!(n.feed(b"[\"\\", 5), Ok(()));
        assert!(n.in_string && n.escape);
        assert_eq!(n.feed(b"\"[\"", 5), Ok(()));
        assert_eq!(
            n.depth, 1,
            "the escaped quote and the bracket in the string do not count"
        );
        assert_eq!(n.feed(b"[[", 2), Err(1));
        assert_eq!(n.depth, 3);
    }
}
