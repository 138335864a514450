//! Retained full results, addressable by an unguessable handle.
//!
//! Aggressive reduction is only safe if what was cut can be had back; and a handle that
//! reaches a model can leak, so reading requires the identity that made the call, and the
//! handle carries 128 random bits.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;

use crate::context::Identity;
use crate::error::StoreError;
use crate::jsonsize::json_size;

/// What a handle resolves to.
#[derive(Debug, Clone, PartialEq)]
pub enum Retained {
    /// The full result after redaction (binary parts already replaced by artifact links).
    Result(Value),
    Artifact {
        mime_type: Option<String>,
        bytes: Vec<u8>,
    },
}

impl Retained {
    fn size(&self) -> usize {
        match self {
            Retained::Result(v) => json_size(v),
            Retained::Artifact { bytes, .. } => bytes.len(),
        }
    }
}

/// Source of "now", injectable so TTL behaviour is testable without sleeping.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

struct Entry {
    owner: Identity,
    item: Arc<Retained>,
    size: usize,
    expires: Instant,
}

/// Entries are keyed by the handle's 128 bits, not its text: the text is made once, for the
/// caller, instead of three times (returned, keyed, queued), and a key hashes in one step.
#[derive(Default)]
struct Inner {
    entries: HashMap<u128, Entry>,
    order: VecDeque<u128>,
    bytes: usize,
}

/// Byte-capped, TTL-bounded, owner-checked store. Oldest entries are evicted to make room.
pub struct Store {
    cap_bytes: usize,
    ttl: Duration,
    clock: Clock,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("cap_bytes", &self.cap_bytes)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Handle prefix, so a handle is recognisable in logs and envelopes.
pub const HANDLE_PREFIX: &str = "rc_";

impl Store {
    pub fn new(cap_bytes: usize, ttl: Duration) -> Self {
        Self::with_clock(cap_bytes, ttl, Arc::new(Instant::now))
    }

    pub fn with_clock(cap_bytes: usize, ttl: Duration, clock: Clock) -> Self {
        Store {
            cap_bytes,
            ttl,
            clock,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Retains `item` for `owner`; returns its handle.
    pub fn put(&self, owner: &Identity, item: Retained) -> Result<String, StoreError> {
        let size = item.size();
        self.put_sized(owner, item, size)
    }

    /// As [`Store::put`] when the caller already knows the item's size (saves a walk over a
    /// large result).
    pub(crate) fn put_sized(
        &self,
        owner: &Identity,
        item: Retained,
        size: usize,
    ) -> Result<String, StoreError> {
        if size > self.cap_bytes {
            return Err(StoreError::TooLarge {
                size,
                cap: self.cap_bytes,
            });
        }
        let now = (self.clock)();
        // Drawn before the lock is taken: nothing about it needs the lock.
        let bits = new_bits();
        let mut inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        purge_expired(&mut inner, now);
        while inner.bytes + size > self.cap_bytes {
            let Some(oldest) = inner.order.pop_front() else {
                break;
            };
            if let Some(e) = inner.entries.remove(&oldest) {
                inner.bytes -= e.size;
            }
        }
        inner.order.push_back(bits);
        inner.bytes += size;
        inner.entries.insert(
            bits,
            Entry {
                owner: owner.clone(),
                item: Arc::new(item),
                size,
                expires: now + self.ttl,
            },
        );
        drop(inner);
        Ok(handle_text(bits))
    }

    /// Reads a retained item. Another identity's handle yields `NotOwner`, never the data.
    pub fn get(&self, handle: &str, caller: &Identity) -> Result<Arc<Retained>, StoreError> {
        let now = (self.clock)();
        let mut inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let key = handle_bits(handle).ok_or(StoreError::NotFound)?;
        let e = inner.entries.get(&key).ok_or(StoreError::NotFound)?;
        if e.owner != *caller {
            return Err(StoreError::NotOwner);
        }
        if e.expires <= now {
            remove(&mut inner, key);
            return Err(StoreError::Expired);
        }
        Ok(Arc::clone(&e.item))
    }

    /// Deletes a retained item; only its owner may.
    pub fn delete(&self, handle: &str, caller: &Identity) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let key = handle_bits(handle).ok_or(StoreError::NotFound)?;
        let e = inner.entries.get(&key).ok_or(StoreError::NotFound)?;
        if e.owner != *caller {
            return Err(StoreError::NotOwner);
        }
        remove(&mut inner, key);
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.entries.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes_used(&self) -> usize {
        self.inner.lock().map_or(0, |i| i.bytes)
    }

    pub fn cap_bytes(&self) -> usize {
        self.cap_bytes
    }
}

/// Removes the entry; its slot in `order` is skipped lazily by `purge_expired` and eviction.
fn remove(inner: &mut Inner, key: u128) {
    if let Some(e) = inner.entries.remove(&key) {
        inner.bytes -= e.size;
    }
}

/// Every entry gets the same TTL, so expiry order is insertion order: purging from the
/// front is enough, and keeps `put` O(1) amortized however many entries are held.
fn purge_expired(inner: &mut Inner, now: Instant) {
    while let Some(front) = inner.order.front() {
        match inner.entries.get(front) {
            Some(e) if e.expires > now => break,
            Some(e) => {
                let size = e.size;
                let h = inner.order.pop_front().unwrap_or_default();
                inner.entries.remove(&h);
                inner.bytes -= size;
            }
            // Already removed (deleted or read after expiry): drop the stale order entry.
            None => {
                inner.order.pop_front();
            }
        }
    }
}

/// 128 bits from the thread-local CSPRNG (ChaCha, OS-seeded): not guessable, not sequential.
fn new_bits() -> u128 {
    rand::rng().random()
}

/// The bits a handle's text spells, for exactly the texts [`handle_text`] makes (prefix, 32
/// lowercase hex digits); any other text names no entry, as it did when the text was the key.
fn handle_bits(handle: &str) -> Option<u128> {
    let hex = handle.strip_prefix(HANDLE_PREFIX)?.as_bytes();
    if hex.len() != 32 {
        return None;
    }
    let mut bits = 0u128;
    for &c in hex {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        bits = bits << 4 | u128::from(d);
    }
    Some(bits)
}

fn handle_text(bits: u128) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Same text as format!("{HANDLE_PREFIX}{bits:032x}"), without the formatting machinery.
    let mut h = String::with_capacity(HANDLE_PREFIX.len() + 32);
    h.push_str(HANDLE_PREFIX);
    for b in bits.to_be_bytes() {
        h.push(char::from(HEX[usize::from(b >> 4)]));
        h.push(char::from(HEX[usize::from(b & 15)]));
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn handle_bits_reads_exactly_the_texts_handle_text_makes() {
        use super::{handle_bits, handle_text};
        for bits in [
            0u128,
            1,
            0xabc,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            let h = handle_text(bits);
            assert_eq!(handle_bits(&h), Some(bits));
            assert_eq!(handle_bits(&h.to_uppercase()), None);
            assert_eq!(handle_bits(&format!("{h}0")), None);
            assert_eq!(handle_bits(&h[..h.len() - 1]), None);
            assert_eq!(handle_bits(&h[3..]), None);
            assert_eq!(handle_bits(&format!(" {h}")), None);
        }
        for bad in [
            "",
            "rc_",
            "rc_+0000000000000000000000000000000",
            "rc_g0000000000000000000000000000000",
            "rc_0000000000000000000000000000000é",
            "RC_00000000000000000000000000000000",
        ] {
            assert_eq!(handle_bits(bad), None, "{bad}");
        }
    }

    #[test]
    fn handle_text_is_prefixed_padded_hex() {
        for bits in [
            0u128,
            1,
            0xabc,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            assert_eq!(
                super::handle_text(bits),
                format!("{}{bits:032x}", super::HANDLE_PREFIX)
            );
        }
    }
}
