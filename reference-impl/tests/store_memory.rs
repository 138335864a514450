//! The store's cap bounds the memory its retained results take, not only a count.
//!
//! A test binary of its own: it counts every live heap byte through its global allocator,
//! and another test running beside it would be counted too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use relaycheck_reference::{Identity, Retained, Store};
use serde_json::{Value, json};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed to `System` unchanged; only a counter is kept beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Rows like a database tool's answer: many small objects, the shape whose parsed form is
/// largest against its text.
fn rows(n: usize, seed: usize) -> Value {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("ord-{seed}-{i}"), "amount": i * 37 % 10_000, "currency": "EUR",
                   "status": if i % 3 == 0 { "open" } else { "shipped" }, "note": "leave at the door"})
        })
        .collect();
    json!({"content": [{"type": "text", "text": format!("{n} rows")}], "structuredContent": {"rows": rows}})
}

/// The heap bytes `fill` leaves live.
fn held_by(fill: impl FnOnce()) -> usize {
    let before = LIVE.load(Ordering::Relaxed);
    fill();
    LIVE.load(Ordering::Relaxed) - before
}

#[test]
fn retained_items_take_about_the_memory_the_cap_allows() {
    results_are_counted_at_what_they_hold();
    results_are_held_as_counted();
    small_artifacts_are_held_as_counted();
}

/// Results, counted against the heap they leave live (trees in the plain build, packed bytes
/// in the `accel` build, and the entries): never under it, or the cap would not bound memory,
/// and not far over it, or the cap would hold needlessly few results. Twenty of them, so that
/// the store's own tables are at their usual load, as `ENTRY_BYTES` assumes.
fn results_are_counted_at_what_they_hold() {
    let store = Store::new(64 << 20, Duration::from_secs(60));
    let me = Identity::new("me");
    let held = held_by(|| {
        for seed in 0..20 {
            // The handles are dropped: only what the store holds stays live.
            store.put(&me, Retained::Result(rows(200, seed))).unwrap();
        }
    });
    let counted = store.bytes_used();
    assert!(
        counted >= held && counted <= held + held / 2,
        "counted {counted} bytes for {held} held"
    );
}

fn results_are_held_as_counted() {
    const CAP: usize = 4 << 20;
    let store = Store::new(CAP, Duration::from_secs(60));
    let me = Identity::new("me");
    let mut handles = Vec::new();
    // About 100 KB of text each: the store fills, then evicts, many times over.
    let held = held_by(|| {
        for seed in 0..200 {
            handles.push(store.put(&me, Retained::Result(rows(1000, seed))).unwrap());
        }
    });
    assert!(store.bytes_used() <= CAP);
    // Counted bytes plus the handles' text and each entry's bookkeeping: were a tree counted
    // by its text, several times its size, the store would hold far above this.
    assert!(
        held <= CAP + CAP / 4,
        "the store holds {held} heap bytes under a cap of {CAP}"
    );
    // What is held reads back as what was put.
    let last = handles.last().unwrap();
    match &*store.get(last, &me).unwrap() {
        Retained::Result(v) => assert_eq!(*v, rows(1000, 199)),
        Retained::Artifact { .. } => panic!("a result read back as an artifact"),
    }
}

/// Many small items, where each entry's own bookkeeping is most of what it holds: it is
/// counted too ([`relaycheck_reference::store::ENTRY_BYTES`]).
fn small_artifacts_are_held_as_counted() {
    const CAP: usize = 4 << 20;
    let store = Store::new(CAP, Duration::from_secs(60));
    let me = Identity::new("me");
    let held = held_by(|| {
        for i in 0..100_000u32 {
            let item = Retained::Artifact {
                mime_type: Some("image/png".into()),
                bytes: i.to_le_bytes().repeat(16),
            };
            // The handles are dropped: only what the store holds stays live.
            store.put(&me, item).unwrap();
        }
    });
    assert!(store.bytes_used() <= CAP);
    assert!(
        held <= CAP + CAP / 4,
        "the store holds {held} heap bytes of {} small artifacts under a cap of {CAP}",
        store.len()
    );
}
