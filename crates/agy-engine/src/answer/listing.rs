//! The answer's response shape listing, taken in the reader's one pass
//! ([`super::AnswerReader::listing`]): the same paths and types as
//! [`Listing::add_text`] over the whole body (the `trajectory` member's
//! value walked as the listing's root), from the reader's events instead of
//! a second walk of the text.
//!
//! It answers only when it is sure to agree with that reading: a key
//! repeated in any object (where the tree, which keeps the last, decides),
//! a `\u` escape of a surrogate anywhere (which the tree's parser may
//! refuse), a member name longer than the reader hands on whole, or a body
//! without a `trajectory` object each leave it without a listing, and the
//! caller lists the text as before.

use super::lex::{Captured, Events, Key, Kind};
use crate::shapes::{Listing, ListingWalk, ScalarKind};

/// The listing events of one answer.
#[derive(Default)]
pub(crate) struct ListingEvents {
    walk: ListingWalk,
    /// The last member name at depth 1 was `trajectory`.
    at_trajectory: bool,
    /// Inside the (first) trajectory object, walked.
    inside: bool,
    found: bool,
    /// The open containers (their depth, whether an object).
    open: Vec<(usize, bool)>,
    /// Per open object, its member names so far (a hash each: an equal
    /// hash of two different names only costs the listing, never a wrong
    /// one).
    names: Vec<Vec<u64>>,
    failed: bool,
}

impl ListingEvents {
    /// The listing, when it is sure (see the module doc); `surrogates`: the
    /// reader saw a surrogate escape.
    pub(crate) fn finish(self, surrogates: bool) -> Option<Listing> {
        if self.failed || surrogates || !self.found {
            return None;
        }
        let mut listing = Listing::new();
        self.walk.finish(&mut listing);
        Some(listing)
    }
}

/// FNV-1a: a cheap hash of a member name.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Events for ListingEvents {
    fn value_start(&mut self, depth: usize, _offset: u64, kind: Kind) -> bool {
        let container = matches!(kind, Kind::Object | Kind::Array);
        if container {
            self.open.push((depth, kind == Kind::Object));
            if kind == Kind::Object {
                self.names.push(Vec::new());
            }
        }
        if !self.inside && depth == 1 && self.at_trajectory && kind == Kind::Object && !self.found {
            self.inside = true;
            self.found = true;
        } else if !self.inside || depth < 1 {
            return false;
        }
        match kind {
            Kind::Object => self.walk.begin_object_kind(),
            Kind::Array => self.walk.begin_array_kind(),
            Kind::String => self.walk.scalar_kind(ScalarKind::String),
            Kind::Number => self.walk.scalar_kind(ScalarKind::Number),
            Kind::Bool => self.walk.scalar_kind(ScalarKind::Bool),
            Kind::Null => self.walk.scalar_kind(ScalarKind::Null),
        }
        false
    }

    fn value_end(&mut self, depth: usize, _end: u64, _captured: Option<Captured<'_>>) {
        let Some(&(open_depth, object)) = self.open.last() else {
            return;
        };
        if open_depth != depth {
            return;
        }
        self.open.pop();
        if object {
            self.names.pop();
        }
        if self.inside {
            self.walk.end_kind();
            if depth == 1 {
                self.inside = false;
            }
        }
    }

    fn wants_key(&self, _depth: usize) -> bool {
        !self.failed
    }

    fn key(&mut self, depth: usize, key: Key<'_>) {
        let (Some(text), false) = (key.text, key.cut) else {
            self.failed = true;
            return;
        };
        let h = fnv(text);
        match self.names.last_mut() {
            Some(names) if names.contains(&h) => {
                self.failed = true;
                return;
            }
            Some(names) => names.push(h),
            None => {}
        }
        if depth == 1 {
            self.at_trajectory = text == "trajectory";
        }
        if self.inside && depth >= 2 {
            self.walk.key_text(text);
        }
    }
}
