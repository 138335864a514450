//! The aggregation cases on a real aggregating target: the reference gateway in front of two
//! canaries. Every case passes when the profile's upstream names match the gateway's, and
//! every case fails when they are crossed (the calls land on the other upstream, which serves
//! a tool of the same name): the cases can tell which upstream got a call. On one-upstream
//! targets they are not applicable.

use std::path::Path;

use relaycheck::profile::Profile;
use relaycheck::suite::{Pool, Trial};
use relaycheck_model::{Outcome, Shape};

fn target(file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/aggregation")
        .join(file)
        .display()
        .to_string()
}

fn outcomes(pool: &Pool, target: &str) -> Vec<(String, Outcome, String)> {
    let cases: Vec<String> = pool
        .catalogue()
        .cases
        .iter()
        .filter(|c| c.surface == "aggregation")
        .map(|c| c.spec.id.clone())
        .collect();
    assert!(cases.len() >= 3, "the aggregation surface has its cases");
    // Every shape a case runs in, the proposals too: a case must hold in each of them.
    let mut out = Vec::new();
    for case in cases {
        let spec = &pool
            .catalogue()
            .cases
            .iter()
            .find(|c| c.spec.id == case)
            .expect("the case is in the catalogue")
            .spec;
        for shape in Shape::ALL.into_iter().filter(|s| spec.applies_to(*s)) {
            let trial = Trial {
                target: target.to_string(),
                case: case.clone(),
                route: "flat".into(),
                shape,
                north: None,
            };
            let result = pool.run(&trial, None).unwrap_or_else(|err| panic!("{err}"));
            out.push((format!("{case} [{shape}]"), result.outcome, result.message));
        }
    }
    out
}

#[test]
fn aggregation_cases_pass_on_two_upstreams_fail_when_crossed_and_skip_on_one() {
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
    let binary = Path::new(env!("CARGO_BIN_EXE_relaycheck"));
    let pool = Pool::new(&specs, binary).unwrap_or_else(|err| panic!("{err}"));
    let good = outcomes(&pool, &target("reference-two-upstreams.toml"));
    let crossed = outcomes(&pool, &target("reference-crossed-upstreams.toml"));
    let single = outcomes(&pool, "reference");
    pool.shutdown();
    for (case, outcome, message) in &good {
        assert_eq!(
            *outcome,
            Outcome::Pass,
            "{case} on two upstreams: {message}"
        );
    }
    for (case, outcome, message) in &crossed {
        assert_eq!(
            *outcome,
            Outcome::Fail,
            "{case} with crossed upstreams: {message}"
        );
        assert!(
            message.starts_with("reached-upstream") || message.contains("upstream"),
            "{case} fails on the upstream it reached: {message}"
        );
    }
    for (case, outcome, message) in &single {
        assert_eq!(*outcome, Outcome::NotApplicable, "{case} on one upstream");
        assert!(message.contains("has one upstream"), "{message}");
    }
}

#[test]
fn a_label_the_profile_does_not_give_is_refused_by_field() {
    let text = std::fs::read_to_string(target("reference-two-upstreams.toml"))
        .unwrap()
        .replace(
            "[routes.flat]",
            "[routes.flat]\narguments = { x = \"{canary_cmd_json:c}\" }\n#",
        );
    let err = Profile::parse(Path::new(&target("x.toml")), &text).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("routes.flat.arguments") && text.contains("names no upstream"),
        "{text}"
    );
}

#[test]
fn upstream_in_a_route_needs_several_canaries() {
    let text = std::fs::read_to_string(target("reference-two-upstreams.toml"))
        .unwrap()
        .replace(
            "[canaries.a]\nname = \"alpha\"\n\n[canaries.b]\nname = \"beta\"\n",
            "",
        )
        .replace("{canary_cmd_json:a}", "{canary_cmd_json}");
    let err = Profile::parse(Path::new(&target("x.toml")), &text).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("routes.flat.tool") && text.contains("[canaries]"),
        "{text}"
    );
}
