//! Retained results: owner-only, capped, expiring, deletable, unguessable handles.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use relaycheck_reference::store::ENTRY_BYTES;
use relaycheck_reference::{Identity, Retained, Store, StoreError};
use serde_json::json;

fn item(n: usize) -> Retained {
    Retained::Artifact {
        mime_type: None,
        bytes: vec![7; n],
    }
}

#[test]
fn owner_reads_others_cannot() {
    let s = Store::new(1 << 20, Duration::from_secs(60));
    let (alice, bob) = (Identity::new("alice"), Identity::new("bob"));
    let h = s.put(&alice, Retained::Result(json!({"a":1}))).unwrap();
    assert_eq!(
        *s.get(&h, &alice).unwrap(),
        Retained::Result(json!({"a":1}))
    );
    assert_eq!(s.get(&h, &bob).unwrap_err(), StoreError::NotOwner);
    assert_eq!(
        s.get("rc_00000000000000000000000000000000", &alice)
            .unwrap_err(),
        StoreError::NotFound
    );
    assert_eq!(s.delete(&h, &bob).unwrap_err(), StoreError::NotOwner);
    assert!(
        s.get(&h, &alice).is_ok(),
        "a refused delete deletes nothing"
    );
    s.delete(&h, &alice).unwrap();
    assert_eq!(s.get(&h, &alice).unwrap_err(), StoreError::NotFound);
    assert_eq!(s.bytes_used(), 0);
}

#[test]
fn ttl_expires() {
    let base = Instant::now();
    let offset = Arc::new(AtomicU64::new(0));
    let o = offset.clone();
    let s = Store::with_clock(
        1 << 20,
        Duration::from_secs(10),
        Arc::new(move || base + Duration::from_secs(o.load(Ordering::SeqCst))),
    );
    let a = Identity::new("a");
    let h = s.put(&a, item(10)).unwrap();
    offset.store(9, Ordering::SeqCst);
    assert!(s.get(&h, &a).is_ok());
    offset.store(10, Ordering::SeqCst);
    assert_eq!(s.get(&h, &a).unwrap_err(), StoreError::Expired);
    assert_eq!(s.get(&h, &a).unwrap_err(), StoreError::NotFound);
    assert!(s.is_empty());
}

#[test]
fn byte_cap_evicts_oldest_and_refuses_oversized() {
    // Each entry counts its bytes and ENTRY_BYTES: room for two of 40 bytes, not three.
    let per_item = 40 + ENTRY_BYTES;
    let cap = 2 * per_item + 20;
    let s = Store::new(cap, Duration::from_secs(60));
    let a = Identity::new("a");
    let h1 = s.put(&a, item(40)).unwrap();
    let h2 = s.put(&a, item(40)).unwrap();
    assert_eq!(s.bytes_used(), 2 * per_item);
    let h3 = s.put(&a, item(40)).unwrap();
    assert_eq!(
        s.get(&h1, &a).unwrap_err(),
        StoreError::NotFound,
        "oldest evicted"
    );
    assert!(s.get(&h2, &a).is_ok() && s.get(&h3, &a).is_ok());
    assert!(s.bytes_used() <= cap);
    let too_large = cap - ENTRY_BYTES + 1;
    assert_eq!(
        s.put(&a, item(too_large)).unwrap_err(),
        StoreError::TooLarge { size: cap + 1, cap }
    );
}

/// Packed (the `accel` build), a result counts about its JSON text (within a fifth: a small
/// number takes nine bytes, a quote or escape none), and the entry.
#[cfg(feature = "accel")]
#[test]
fn a_result_counts_about_its_json_text() {
    let s = Store::new(1 << 20, Duration::from_secs(60));
    let v = json!({"rows": (0..100).map(|i| json!({"id": format!("ord-{i}"), "n": i})).collect::<Vec<_>>()});
    s.put(&Identity::new("a"), Retained::Result(v.clone()))
        .unwrap();
    let text = v.to_string().len();
    let counted = s.bytes_used() - ENTRY_BYTES;
    assert!(
        counted * 10 <= text * 12 && counted * 10 >= text * 8,
        "counted {counted} for {text} bytes of JSON"
    );
}

/// Held as a tree (the plain build), a result counts its tree, several times its text for
/// rows of small objects; the `store_memory` test holds the count to the heap it takes.
#[cfg(not(feature = "accel"))]
#[test]
fn a_result_counts_its_tree() {
    let s = Store::new(1 << 20, Duration::from_secs(60));
    let v = json!({"rows": (0..100).map(|i| json!({"id": format!("ord-{i}"), "n": i})).collect::<Vec<_>>()});
    s.put(&Identity::new("a"), Retained::Result(v.clone()))
        .unwrap();
    let text = v.to_string().len();
    let counted = s.bytes_used() - ENTRY_BYTES;
    assert!(
        counted >= text * 3,
        "counted {counted} for {text} bytes of JSON"
    );
}

/// A result nested deeper than serde_json reads back from its text is still returned
/// exactly as it was put.
#[test]
fn a_result_deeper_than_serde_json_reads_comes_back_whole() {
    let mut v = json!({"leaf": [1, 2.5, "x"]});
    for i in 0..600 {
        v = if i % 2 == 0 {
            json!([v, i])
        } else {
            json!({"level": v, "i": i})
        };
    }
    assert!(serde_json::from_str::<serde_json::Value>(&v.to_string()).is_err());
    let s = Store::new(1 << 24, Duration::from_secs(60));
    let a = Identity::new("a");
    let h = s.put(&a, Retained::Result(v.clone())).unwrap();
    assert!(*s.get(&h, &a).unwrap() == Retained::Result(v));
}

#[test]
fn handles_are_128_bit_random() {
    let s = Store::new(1 << 20, Duration::from_secs(60));
    let a = Identity::new("a");
    let mut seen = HashSet::new();
    for _ in 0..2000 {
        let h = s.put(&a, item(1)).unwrap();
        let hex = h.strip_prefix("rc_").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(seen.insert(h));
    }
    // Not sequential: consecutive handles share no long common prefix on average.
    let v: Vec<_> = seen.iter().take(50).collect();
    let common = v.windows(2).filter(|w| w[0][..10] == w[1][..10]).count();
    assert_eq!(common, 0);
}

#[test]
fn normalize_reports_store_refusal() {
    use relaycheck_reference::{CallEnd, Context, normalize};
    let store = Arc::new(Store::new(1000, Duration::from_secs(60)));
    let ctx = Context::new("s", "t", "c", Identity::new("a"))
        .with_budget(1024)
        .with_store(store);
    let text = "word ".repeat(5000);
    let env = normalize(
        &CallEnd::response(json!({"content":[{"type":"text","text": text}]})),
        &ctx,
    );
    let t = env.meta.truncation.unwrap();
    assert!(t.handle.is_none());
    assert!(t.handle_note.unwrap().contains("exceeds the store cap"));
    assert!(t.marker.contains("not retained"));
}
