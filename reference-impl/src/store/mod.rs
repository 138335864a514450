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

#[cfg(feature = "accel")]
mod packed;
mod tree;

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

/// What an entry costs beyond its item's bytes, counted against the cap with them: the map
/// slot, the queue slot and the shared item's allocation, at the tables' usual load (the
/// `store_memory` test measures it), before the allocator's own headers. Without it, a store
/// of small artifacts (an icon, a thumbnail) held several times what it counted.
pub const ENTRY_BYTES: usize = 320;

/// An item as the store holds it. The cap is a promise about memory, so an item is counted
/// at the heap it takes, not at the size of its JSON text: a parsed result takes several
/// times its text, and a store of trees counted by their text held many times its cap.
#[derive(Clone)]
enum Held {
    /// The item as it was put, shared, so that a read is a reference count and no copy.
    Whole(Arc<Retained>),
    /// A result packed (see [`packed`]): about as many bytes as its JSON text, so that the
    /// same cap holds several times more results; a read rebuilds the tree.
    #[cfg(feature = "accel")]
    Packed(Arc<Vec<u8>>),
}

impl Held {
    /// The item as put, and the bytes it is counted at.
    fn whole(item: Retained) -> (Self, usize) {
        let size = match &item {
            Retained::Result(v) => tree::heap_bytes(v),
            Retained::Artifact { mime_type, bytes } => {
                bytes.len() + mime_type.as_ref().map_or(0, String::len)
            }
        };
        (Held::Whole(Arc::new(item)), size + ENTRY_BYTES)
    }

    #[cfg(feature = "accel")]
    fn packed(v: &Value) -> (Self, usize) {
        let packed = packed::pack(v);
        let size = packed.len() + ENTRY_BYTES;
        (Held::Packed(Arc::new(packed)), size)
    }

    /// Called after the store's lock is released: unpacking a large result takes a while.
    fn read(&self) -> Arc<Retained> {
        match self {
            Held::Whole(item) => Arc::clone(item),
            #[cfg(feature = "accel")]
            Held::Packed(b) => Arc::new(Retained::Result(
                packed::unpack(b).expect("the store unpacks what it packed"),
            )),
        }
    }
}

/// Source of "now", injectable so TTL behaviour is testable without sleeping.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

struct Entry {
    owner: Arc<Identity>,
    item: Held,
    /// The bytes the item holds, and [`ENTRY_BYTES`] for the entry itself.
    size: usize,
    expires: Instant,
}

/// Entries are keyed by the handle's 128 bits, not its text: the text is made once, for the
/// caller, instead of three times (returned, keyed, queued), and a key hashes in one step.
#[derive(Default)]
struct Inner {
    entries: HashMap<u128, Entry>,
    /// Keys in insertion order, each with its entry's expiry: with no stale keys, `put` sees
    /// that the oldest entry is live without looking it up (in a large store, a cache miss).
    order: VecDeque<(u128, Instant)>,
    bytes: usize,
    /// Keys in `order` whose entry was removed out of turn (deleted, or read after expiry).
    stale: usize,
    /// The last owner's identity, shared by its entries: one caller's results are usually
    /// stored one after another, and each entry would otherwise hold its own copy.
    last_owner: Option<Arc<Identity>>,
}

/// Byte-capped, TTL-bounded, owner-checked store. Oldest entries are evicted to make room.
pub struct Store {
    cap_bytes: usize,
    ttl: Duration,
    clock: Clock,
    inner: Mutex<Inner>,
    /// Whether results are packed: always, but in the test that holds the packed store to
    /// the plain one.
    #[cfg(feature = "accel")]
    pack_results: bool,
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
            #[cfg(feature = "accel")]
            pack_results: true,
        }
    }

    /// Retains `item` for `owner`; returns its handle. An item is counted at the heap it takes
    /// (a result packed in the `accel` build, about its JSON text; a tree otherwise, several
    /// times that), and every entry also counts [`ENTRY_BYTES`].
    pub fn put(&self, owner: &Identity, item: Retained) -> Result<String, StoreError> {
        #[cfg(feature = "accel")]
        if self.pack_results
            && let Retained::Result(v) = &item
        {
            let (held, size) = Held::packed(v);
            // The tree is freed here, before the lock is taken, not at eviction.
            drop(item);
            return self.insert(owner, held, size);
        }
        let (held, size) = Held::whole(item);
        self.insert(owner, held, size)
    }

    fn insert(&self, owner: &Identity, item: Held, size: usize) -> Result<String, StoreError> {
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
            let Some((oldest, _)) = inner.order.pop_front() else {
                break;
            };
            match inner.entries.remove(&oldest) {
                Some(e) => inner.bytes -= e.size,
                None => inner.stale -= 1,
            }
        }
        let owner = match &inner.last_owner {
            Some(o) if **o == *owner => Arc::clone(o),
            _ => {
                let o = Arc::new(owner.clone());
                inner.last_owner = Some(Arc::clone(&o));
                o
            }
        };
        let expires = now + self.ttl;
        inner.order.push_back((bits, expires));
        inner.bytes += size;
        inner.entries.insert(
            bits,
            Entry {
                owner,
                item,
                size,
                expires,
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
        if *e.owner != *caller {
            return Err(StoreError::NotOwner);
        }
        if e.expires <= now {
            remove(&mut inner, key);
            return Err(StoreError::Expired);
        }
        let held = e.item.clone();
        drop(inner);
        Ok(held.read())
    }

    /// Deletes a retained item; only its owner may.
    pub fn delete(&self, handle: &str, caller: &Identity) -> Result<(), StoreError> {
        let mut inner = self.inner.lock().map_err(|_| StoreError::Poisoned)?;
        let key = handle_bits(handle).ok_or(StoreError::NotFound)?;
        let e = inner.entries.get(&key).ok_or(StoreError::NotFound)?;
        if *e.owner != *caller {
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
        inner.stale += 1;
    }
}

/// Every entry gets the same TTL, so expiry order is insertion order: purging from the
/// front is enough, and keeps `put` O(1) amortized however many entries are held.
fn purge_expired(inner: &mut Inner, now: Instant) {
    while let Some(&(key, expires)) = inner.order.front() {
        // No stale keys: the front's entry exists and expires as its slot says.
        if inner.stale == 0 && expires > now {
            break;
        }
        match inner.entries.get(&key) {
            Some(e) if e.expires > now => break,
            Some(e) => {
                let size = e.size;
                inner.order.pop_front();
                inner.entries.remove(&key);
                inner.bytes -= size;
            }
            // Already removed (deleted or read after expiry): drop the stale order entry.
            None => {
                inner.order.pop_front();
                inner.stale -= 1;
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
    use std::collections::{HashMap, VecDeque};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use super::{Held, Retained, Store};
    use crate::context::Identity;
    use crate::error::StoreError;

    /// Any JSON value, integer kinds and float bits included.
    #[cfg(feature = "accel")]
    pub(super) fn arb_json() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        use serde_json::{Value, json};
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<u64>().prop_map(|u| json!(u)),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| json!(f)),
            "\\PC{0,300}".prop_map(Value::String),
        ];
        leaf.prop_recursive(6, 200, 10, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..10).prop_map(Value::Array),
                prop::collection::vec(("\\PC{0,12}", inner), 0..10)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// An item counted at whatever size a test gives it.
    fn empty_item() -> Held {
        Held::Whole(Arc::new(Retained::Artifact {
            mime_type: None,
            bytes: Vec::new(),
        }))
    }

    /// A deleted oldest entry does not stop the purge from reaching expired ones behind it
    /// (with a clock that went back, a later entry can expire first).
    #[test]
    fn stale_front_does_not_hide_expired_entries() {
        let t0 = Instant::now();
        let clock = Arc::new(Mutex::new(t0 + Duration::from_secs(10)));
        let c = Arc::clone(&clock);
        let s = Store::with_clock(
            1000,
            Duration::from_secs(10),
            Arc::new(move || *c.lock().unwrap()),
        );
        let me = Identity::new("me");
        let a = s.insert(&me, empty_item(), 10).unwrap();
        *clock.lock().unwrap() = t0;
        s.insert(&me, empty_item(), 20).unwrap();
        s.delete(&a, &me).unwrap();
        *clock.lock().unwrap() = t0 + Duration::from_secs(15);
        s.insert(&me, empty_item(), 40).unwrap();
        assert_eq!((s.len(), s.bytes_used()), (1, 40));
    }

    /// The store against the plain algorithm it replaced (text keys in the queue, each purge
    /// step looked up), on random puts, reads, deletes and clock moves, backwards included.
    #[test]
    fn store_matches_the_plain_algorithm() {
        struct Model {
            owner: usize,
            size: usize,
            expires: Instant,
        }
        const CAP: usize = 1000;
        let ttl = Duration::from_secs(10);
        let t0 = Instant::now();
        let clock = Arc::new(Mutex::new(t0));
        let c = Arc::clone(&clock);
        let s = Store::with_clock(CAP, ttl, Arc::new(move || *c.lock().unwrap()));
        let ids = [Identity::new("a"), Identity::new("b")];
        let mut entries: HashMap<String, Model> = HashMap::new();
        let mut order: VecDeque<String> = VecDeque::new();
        let mut bytes = 0usize;
        let mut handles: Vec<String> = Vec::new();
        let mut offset = 0u64;
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..20_000 {
            let now = *clock.lock().unwrap();
            let who = rnd(2) as usize;
            match rnd(12) {
                0..=4 => {
                    let size = rnd(320) as usize + 1;
                    let h = s.insert(&ids[who], empty_item(), size).unwrap();
                    while let Some(front) = order.front() {
                        match entries.get(front) {
                            Some(e) if e.expires > now => break,
                            Some(e) => {
                                bytes -= e.size;
                                let f = order.pop_front().unwrap();
                                entries.remove(&f);
                            }
                            None => {
                                order.pop_front();
                            }
                        }
                    }
                    while bytes + size > CAP {
                        let Some(oldest) = order.pop_front() else {
                            break;
                        };
                        if let Some(e) = entries.remove(&oldest) {
                            bytes -= e.size;
                        }
                    }
                    order.push_back(h.clone());
                    bytes += size;
                    let expires = now + ttl;
                    entries.insert(
                        h.clone(),
                        Model {
                            owner: who,
                            size,
                            expires,
                        },
                    );
                    handles.push(h);
                }
                5..=7 if !handles.is_empty() => {
                    let h = handles[rnd(handles.len() as u64) as usize].clone();
                    let read = rnd(3) > 0;
                    let want = match entries.get(&h) {
                        None => Err(StoreError::NotFound),
                        Some(e) if e.owner != who => Err(StoreError::NotOwner),
                        Some(e) if read && e.expires <= now => {
                            bytes -= e.size;
                            entries.remove(&h);
                            Err(StoreError::Expired)
                        }
                        Some(e) => {
                            if !read {
                                bytes -= e.size;
                                entries.remove(&h);
                            }
                            Ok(())
                        }
                    };
                    let got = if read {
                        s.get(&h, &ids[who]).map(|_| ())
                    } else {
                        s.delete(&h, &ids[who])
                    };
                    assert_eq!(got, want);
                }
                8..=10 => offset += rnd(4),
                _ => offset = offset.saturating_sub(rnd(24)),
            }
            *clock.lock().unwrap() = t0 + Duration::from_secs(offset);
            assert_eq!(s.len(), entries.len());
            assert_eq!(s.bytes_used(), bytes);
        }
    }

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

    /// The `accel` store packs results; the plain one keeps the trees. For the same puts,
    /// reads, deletes and clock moves, by the same identities, both answer the same: the same
    /// items, exactly as put, and the same refusals. The cap is far above what a run puts:
    /// each store counts what it holds, so under pressure they evict at different times by
    /// design.
    #[cfg(feature = "accel")]
    mod packed_against_plain {
        use std::sync::{Arc, Mutex};
        use std::time::{Duration, Instant};

        use proptest::prelude::*;

        use super::super::{Retained, Store};
        use super::arb_json;
        use crate::context::Identity;

        #[derive(Debug, Clone)]
        enum Op {
            Put(usize, Retained),
            Get(prop::sample::Index, usize),
            Delete(prop::sample::Index, usize),
            Wait(u64),
        }

        fn arb_op() -> impl Strategy<Value = Op> {
            let item = prop_oneof![
                3 => arb_json().prop_map(Retained::Result),
                1 => (
                    proptest::option::of("[a-z]{1,8}/[a-z]{1,8}"),
                    prop::collection::vec(any::<u8>(), 0..64)
                )
                    .prop_map(|(mime_type, bytes)| Retained::Artifact { mime_type, bytes }),
            ];
            prop_oneof![
                4 => (0..2usize, item).prop_map(|(who, item)| Op::Put(who, item)),
                4 => (any::<prop::sample::Index>(), 0..2usize).prop_map(|(i, who)| Op::Get(i, who)),
                1 => (any::<prop::sample::Index>(), 0..2usize)
                    .prop_map(|(i, who)| Op::Delete(i, who)),
                1 => (0..8u64).prop_map(Op::Wait),
            ]
        }

        proptest! {
            #[test]
            fn the_packed_store_answers_as_the_plain_store(
                ops in prop::collection::vec(arb_op(), 1..40)
            ) {
                let t0 = Instant::now();
                let clock = Arc::new(Mutex::new(t0));
                let c = Arc::clone(&clock);
                let now: super::super::Clock = Arc::new(move || *c.lock().unwrap());
                let ttl = Duration::from_secs(10);
                let packed = Store::with_clock(1 << 30, ttl, Arc::clone(&now));
                let plain = Store {
                    pack_results: false,
                    ..Store::with_clock(1 << 30, ttl, now)
                };
                let ids = [Identity::new("a"), Identity::new("b")];
                let mut handles: Vec<(String, String)> = Vec::new();
                let read = |r: Result<Arc<Retained>, _>| r.map(|item| (*item).clone());
                for op in ops {
                    match op {
                        Op::Put(who, item) => {
                            let a = packed.put(&ids[who], item.clone());
                            let b = plain.put(&ids[who], item);
                            match (a, b) {
                                (Ok(a), Ok(b)) => handles.push((a, b)),
                                (a, b) => prop_assert!(false, "put: {a:?} against {b:?}"),
                            }
                        }
                        Op::Get(i, who) if !handles.is_empty() => {
                            let (a, b) = &handles[i.index(handles.len())];
                            prop_assert_eq!(
                                read(packed.get(a, &ids[who])),
                                read(plain.get(b, &ids[who]))
                            );
                        }
                        Op::Delete(i, who) if !handles.is_empty() => {
                            let (a, b) = &handles[i.index(handles.len())];
                            prop_assert_eq!(packed.delete(a, &ids[who]), plain.delete(b, &ids[who]));
                        }
                        Op::Wait(secs) => *clock.lock().unwrap() += Duration::from_secs(secs),
                        Op::Get(..) | Op::Delete(..) => {}
                    }
                    prop_assert_eq!(packed.len(), plain.len());
                }
                // Every item still held reads back the same from both, by its owner.
                for (a, b) in &handles {
                    for who in &ids {
                        prop_assert_eq!(read(packed.get(a, who)), read(plain.get(b, who)));
                    }
                }
            }
        }
    }
}
