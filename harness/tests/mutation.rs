//! The second proof, in `cargo test`: every mutant of the reference gateway is still caught,
//! and every case catches a mutant or says why it cannot.
//!
//! The full table comes from `relaycheck mutants --target reference` (minutes); this test uses
//! its committed JSON as an index and re-runs, for each mutant, the cases recorded as catching
//! it, so it stays fast and still fails when a mutant stops being caught, when a mutant or a
//! case is added without the table being regenerated, or when a case catches nothing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use relaycheck::suite::{Pool, Trial};
use relaycheck_model::Shape;
use serde_json::Value;

/// Mutants whose recorded cases run at once.
const MUTANTS_AT_ONCE: usize = 6;

/// Whether the mutant still fails one of the (first three) cases recorded as catching it, in
/// the shapes and bridged pairs the table ran.
fn caught(
    pool: &Pool,
    catalogue: &relaycheck::catalogue::Catalogue,
    shapes: &[Shape],
    bridges: &[(Shape, Shape)],
    target: &str,
    mutant: &Value,
) -> bool {
    let name = mutant["name"].as_str().unwrap();
    let caught_by: Vec<&str> = mutant["caught_by"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for case_id in caught_by.iter().take(3) {
        let Some(case) = catalogue.cases.iter().find(|c| c.spec.id == *case_id) else {
            continue;
        };
        // Each negotiated shape of the case, then each bridged pair the table ran.
        let runs = shapes
            .iter()
            .filter(|s| case.spec.applies_to(**s))
            .map(|s| (*s, None))
            .chain(
                bridges
                    .iter()
                    .filter(|(n, s)| case.spec.applies_to(*n) && case.spec.applies_to(*s))
                    .map(|(n, s)| (*s, Some(*n))),
            );
        for (shape, north) in runs {
            for route in &case.spec.routes {
                let trial = Trial {
                    target: target.to_string(),
                    case: case_id.to_string(),
                    route: route.clone(),
                    shape,
                    north,
                };
                let result = pool.run(&trial, Some(name)).unwrap();
                if relaycheck::mutation::shows_defect(&result) {
                    return true;
                }
            }
        }
    }
    false
}

#[test]
fn every_mutant_is_caught_and_every_case_catches_one() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let table_path = repo.join("reports/reference/mutants.json");
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(&table_path).unwrap_or_else(|err| {
            panic!(
                "{}: {err}; run `relaycheck mutants --target reference`",
                table_path.display()
            )
        }))
        .unwrap();
    let relaycheck = env!("CARGO_BIN_EXE_relaycheck");
    let listing = Command::new(relaycheck)
        .args(["gateway", "--list-mutants"])
        .output()
        .unwrap();
    let listed: BTreeSet<String> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|line| line.split('\t').next().map(str::to_string))
        .collect();
    let mutants = table["mutants"].as_array().unwrap();
    let recorded: BTreeSet<String> = mutants
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        listed, recorded,
        "the gateway's mutants differ from the table: regenerate it"
    );
    assert!(
        table["baseline_failures"].as_array().unwrap().is_empty(),
        "cases failed on the unmutated reference when the table was made"
    );
    let shapes: Vec<Shape> = serde_json::from_value(table["shapes"].clone()).unwrap();
    let bridges: Vec<(Shape, Shape)> =
        serde_json::from_value(table["bridges"].clone()).unwrap_or_default();
    let target = table["target"].as_str().unwrap().to_string();

    let pool = Pool::new(&repo.join("specs"), Path::new(relaycheck)).unwrap();
    let catalogue = pool.catalogue().clone();
    let mut catching = BTreeSet::new();
    for mutant in mutants {
        catching.extend(
            mutant["caught_by"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string),
        );
    }
    // Each mutant is a target of its own that its trials wait on: several mutants at once. Those
    // caught by cases that move tens of mebibytes run alone afterwards: beside others, on a
    // loaded machine, the reference's own call budget can run out before its read bound is
    // reached, and the verdict would depend on the load.
    let moves_mebibytes = |mutant: &&Value| {
        mutant["caught_by"]
            .as_array()
            .into_iter()
            .flatten()
            .take(3)
            .filter_map(Value::as_str)
            .any(|id| {
                catalogue
                    .cases
                    .iter()
                    .any(|case| case.spec.id == id && relaycheck::run::moves_mebibytes(case))
            })
    };
    let (heavy, light): (Vec<&Value>, Vec<&Value>) = mutants.iter().partition(moves_mebibytes);
    let mut survivors: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = light
            .chunks(light.len().div_ceil(MUTANTS_AT_ONCE).max(1))
            .map(|chunk| {
                let (pool, catalogue, shapes, bridges, target) =
                    (&pool, &catalogue, &shapes, &bridges, &target);
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter(|mutant| !caught(pool, catalogue, shapes, bridges, target, mutant))
                        .map(|mutant| mutant["name"].as_str().unwrap().to_string())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    survivors.extend(
        heavy
            .iter()
            .filter(|mutant| !caught(&pool, &catalogue, &shapes, &bridges, &target, mutant))
            .map(|mutant| mutant["name"].as_str().unwrap().to_string()),
    );
    pool.shutdown();
    assert!(
        survivors.is_empty(),
        "mutants no longer caught by their recorded cases: {survivors:?}"
    );
    let idle: Vec<&str> = catalogue
        .cases
        .iter()
        .filter(|c| !catching.contains(&c.spec.id) && c.spec.no_mutant.is_none())
        .map(|c| c.spec.id.as_str())
        .collect();
    assert!(
        idle.is_empty(),
        "{} case(s) catch no mutant and give no reason (no_mutant) in their file: {idle:?}",
        idle.len()
    );
}
