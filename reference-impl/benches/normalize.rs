//! Normalizer cost against the floor of any JSON gateway: parse the same bytes and
//! serialize them again. Goal: within 2x of that baseline at 1 KB, 1 MB and 50 MB.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use relaycheck_reference::{Context, Identity, Store, normalize_bytes};
use serde_json::{Value, json};

fn rows_body(target: usize) -> Value {
    let mut rows = Vec::new();
    let mut size = 0;
    let mut i = 0usize;
    while size < target {
        let r = json!({"id": format!("ord-{i}"), "customerId": format!("c-{}", i % 977), "name": format!("Order number {i}"),
            "amount": (i * 37) % 10_000, "currency": "EUR", "status": if i.is_multiple_of(3) { "open" } else { "shipped" },
            "note": "standard delivery, leave at the door"});
        size += 200;
        rows.push(r);
        i += 1;
    }
    let n = rows.len();
    json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text": format!("{n} orders")}],
        "structuredContent":{"rows": rows, "total": n, "nextCursor":"eyJwYWdlIjoyfQ"}}})
}

fn text_body(target: usize) -> Value {
    let mut t = String::with_capacity(target + 100);
    let mut i = 0;
    while t.len() < target {
        t.push_str(&format!(
            "2025-11-25T10:{:02}:{:02}Z INFO worker-{} processed job {i} in {} ms\n",
            (i / 60) % 60,
            i % 60,
            i % 8,
            i % 997
        ));
        i += 1;
    }
    json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text": t}]}})
}

fn html_body(target: usize) -> Value {
    let mut h = String::from(
        "<!DOCTYPE html><html><head><title>Report</title><style>td{padding:2px}</style></head><body><h1>Orders</h1><p>All orders &amp; totals.</p><table><thead><tr><th>Id</th><th>Customer</th><th>Amount</th></tr></thead><tbody>",
    );
    let mut i = 0;
    while h.len() < target {
        h.push_str(&format!(
            "<tr><td>ord-{i}</td><td><a href=\"/c/{0}\">Customer {0}</a></td><td>{1}.00</td></tr>",
            i % 977,
            (i * 37) % 10_000
        ));
        i += 1;
    }
    h.push_str("</tbody></table></body></html>");
    json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text": h}]}})
}

fn mixed_body(target: usize) -> Value {
    let quarter = target / 4;
    let rows = rows_body(quarter)["result"]["structuredContent"].clone();
    let text = text_body(quarter)["result"]["content"][0]["text"].clone();
    let bin: Vec<u8> = (0..quarter * 3 / 4).map(|i| (i % 251) as u8).collect();
    let data = base64::engine::general_purpose::STANDARD.encode(&bin);
    json!({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[
        {"type":"text","text": text},
        {"type":"image","data": data, "mimeType":"image/png"},
        {"type":"resource_link","uri":"file:///exports/orders.csv","name":"orders.csv"}],
        "structuredContent": rows,
        "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1"}}}})
}

type MakeBody = fn(usize) -> Value;

fn bench(c: &mut Criterion) {
    let store = Arc::new(Store::new(256 * 1024 * 1024, Duration::from_secs(60)));
    let ctx = Context::new("bench", "tool", "call", Identity::new("bench")).with_store(store);
    let sizes: [(&str, usize); 3] = [("1KB", 1024), ("1MB", 1 << 20), ("50MB", 50 << 20)];
    let kinds: [(&str, MakeBody); 4] = [
        ("rows", rows_body),
        ("text", text_body),
        ("html", html_body),
        ("mixed", mixed_body),
    ];
    for (size_name, size) in sizes {
        let mut g = c.benchmark_group(format!("normalize_{size_name}"));
        g.sample_size(10);
        if size > (1 << 20) {
            g.warm_up_time(Duration::from_millis(500));
            g.measurement_time(Duration::from_secs(4));
        } else {
            g.warm_up_time(Duration::from_secs(1));
            g.measurement_time(Duration::from_secs(2));
        }
        for (kind, make) in kinds {
            let bytes = serde_json::to_vec(&make(size)).expect("serializable");
            g.throughput(Throughput::Bytes(bytes.len() as u64));
            g.bench_with_input(
                BenchmarkId::new("baseline_parse_serialize", kind),
                &bytes,
                |b, bytes| {
                    b.iter(|| {
                        let v: Value = serde_json::from_slice(black_box(bytes)).expect("valid");
                        black_box(serde_json::to_vec(&v).expect("serializable"))
                    })
                },
            );
            g.bench_with_input(
                BenchmarkId::new("normalize_bytes_serialize", kind),
                &bytes,
                |b, bytes| {
                    b.iter(|| {
                        let env = normalize_bytes(black_box(bytes), &ctx);
                        black_box(serde_json::to_vec(&env).expect("serializable"))
                    })
                },
            );
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
