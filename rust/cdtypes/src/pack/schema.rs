//! Type fingerprints: what a sender and a receiver check that they agree on.

use super::traits::{Pack, Unpack};

/// A type fingerprint: a 64-bit FNV-1a hash of a description of the type, written first in
/// the stream and checked by the receiver, so that receiving a frame as another type is an
/// error. Derived types describe themselves by name, field names and field types as written
/// (and their generic parameters); std types by their structure.
#[derive(Clone, Debug)]
pub struct Schema {
    hash: u64,
}

impl Default for Schema {
    fn default() -> Self {
        Schema {
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }
}

impl Schema {
    /// Mix `part` (and a separator) into the fingerprint.
    pub fn push(&mut self, part: &str) {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            self.hash ^= u64::from(b);
            self.hash = self.hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The fingerprint so far.
    pub fn finish(&self) -> u64 {
        self.hash
    }

    /// The fingerprint of `T` as a sender describes it.
    pub fn of_pack<T: Pack + ?Sized>() -> u64 {
        Self::cached(<T as Pack>::describe)
    }

    /// The fingerprint of `T` as a receiver describes it.
    pub fn of_unpack<T: Unpack>() -> u64 {
        Self::cached(<T as Unpack>::describe)
    }

    /// The fingerprint a `describe` function makes, remembered by the thread (every message
    /// needs it, and describing a type hashes its text and may allocate). Keyed by the
    /// function's address: two functions at one address are the same code, which describes
    /// the same way (`describe` is a pure function of the type).
    fn cached(describe: fn(&mut Schema)) -> u64 {
        const N: usize = 8;
        thread_local! {
            static CACHE: std::cell::Cell<([(usize, u64); N], usize)> =
                const { std::cell::Cell::new(([(0, 0); N], 0)) };
        }
        let key = describe as usize;
        let compute = || {
            let mut s = Schema::default();
            describe(&mut s);
            s.finish()
        };
        CACHE
            .try_with(|c| {
                let (mut entries, next) = c.get();
                if let Some((_, h)) = entries.iter().find(|(k, _)| *k == key) {
                    return *h;
                }
                let h = compute();
                entries[next % N] = (key, h);
                c.set((entries, next + 1));
                h
            })
            .unwrap_or_else(|_| compute())
    }
}
