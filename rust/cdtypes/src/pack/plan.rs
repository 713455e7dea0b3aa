//! Receive plans: what a receive knows of a type's stream before it arrives.

use crate::error::Result;

use super::sequences::SeqSink;

/// One item of a receive plan.
#[derive(Clone, Copy)]
pub(crate) enum PlanItem {
    /// Bytes kept for the unpacker.
    Fixed(usize),
    /// A `u64` length (kept), then that many elements of `size` bytes unpacked on arrival.
    Seq {
        size: usize,
        make: fn(usize) -> Result<Box<dyn SeqSink>>,
        /// the element type's [`Unpack::ANY_BYTES`](super::Unpack::ANY_BYTES)
        any_bytes: bool,
    },
}

/// How a type's packed stream is laid out, as far as a receive can tell before it arrives:
/// fixed bytes, and sequences of fixed-size elements (a length, then the elements) that can
/// be unpacked as they arrive. Anything else ends the plan: the rest of the stream is kept
/// for [`Unpacker`]. A plan that disagrees with what [`Unpack::unpack`] reads makes the
/// receive fail with a mismatch, never anything worse.
///
/// [`Unpacker`]: super::Unpacker
/// [`Unpack::unpack`]: super::Unpack::unpack
#[doc(hidden)]
pub struct __Plan {
    pub(super) items: Vec<PlanItem>,
    pub(super) ended: bool,
}

pub(crate) type Plan = __Plan;

impl Default for __Plan {
    /// A plan of a whole stream: the fingerprint comes first.
    fn default() -> Self {
        __Plan {
            items: vec![PlanItem::Fixed(8)],
            ended: false,
        }
    }
}

/// Most items a plan takes (a struct of many fields of sequences); the rest is kept.
const PLAN_MAX_ITEMS: usize = 64;

impl __Plan {
    pub(super) fn empty() -> Self {
        __Plan {
            items: Vec::new(),
            ended: false,
        }
    }

    /// `n` fixed bytes.
    pub fn fixed(&mut self, n: usize) {
        if self.ended || n == 0 {
            return;
        }
        // (the fingerprint, item 0, stays an item of its own: it is checked on arrival)
        let merge = self.items.len() > 1;
        match self.items.last_mut() {
            Some(PlanItem::Fixed(m)) if merge => *m += n,
            _ => self.push(PlanItem::Fixed(n)),
        }
    }

    /// A sequence of fixed-size elements read by the unpacker (no gain from planning it: the
    /// plan ends there).
    pub fn inline_seq(&mut self, _size: usize) {
        self.rest();
    }

    /// From here on the stream is read by the unpacker.
    pub fn rest(&mut self) {
        self.ended = true;
    }

    pub(super) fn push(&mut self, item: PlanItem) {
        if self.ended {
            // after an item the plan cannot follow, the stream is the unpacker's
        } else if self.items.len() >= PLAN_MAX_ITEMS {
            self.ended = true;
        } else {
            self.items.push(item);
        }
    }

    /// Items up to the first sequence: a plan without one gains nothing.
    pub(crate) fn into_items(mut self) -> Vec<PlanItem> {
        if !self.items.iter().any(|i| matches!(i, PlanItem::Seq { .. })) {
            self.items.clear();
        }
        self.items
    }
}
