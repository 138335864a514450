//! The second proof of a conformance suite: every case can fail. Each deliberate defect of a
//! target (a mutant) must make at least one case fail, and every case must catch at least one
//! mutant or say in its file why it cannot.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use relaycheck_model::Outcome;
use tabled::builder::Builder;
use tabled::settings::Style;

use relaycheck_model::catalogue::Catalogue;
use relaycheck_model::results::CaseResult;

/// A mutant as the target lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// The name `--mutant` takes.
    pub name: String,
    /// The surface whose behaviour the defect breaks.
    pub surface: String,
    /// The defect, in one sentence.
    pub defect: String,
}

/// Reads `name<TAB>surface<TAB>defect` lines.
pub fn parse_listing(text: &str) -> Result<Vec<Mutant>, String> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .enumerate()
        .map(|(index, line)| {
            let mut parts = line.splitn(3, '\t');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(name), Some(surface), Some(defect)) if !name.is_empty() => Ok(Mutant {
                    name: name.to_string(),
                    surface: surface.to_string(),
                    defect: defect.to_string(),
                }),
                _ => Err(format!(
                    "line {} of the mutant listing is not `name<TAB>surface<TAB>defect`: {line}",
                    index + 1
                )),
            }
        })
        .collect()
}

/// Which cases each mutant made fail, against a baseline where they passed.
#[derive(Debug, Clone, Default)]
pub struct MutationTable {
    /// Every mutant of the target, in the order of its listing.
    pub mutants: Vec<Mutant>,
    /// mutant name → ids of the cases that failed on it (and passed on the baseline).
    pub caught: BTreeMap<String, BTreeSet<String>>,
    /// Cases that did not pass on the unmutated target: the first proof failed for them.
    pub baseline_failures: BTreeSet<String>,
    /// The bridged pairs (north, south) each mutant was run in beside the shapes.
    pub bridges: Vec<(relaycheck_model::Shape, relaycheck_model::Shape)>,
}

/// Whether a result shows the mutant: a failure, or an `observe` case whose check saw the
/// defect (it reports and never fails a run, yet it is what catches a defect of form).
pub fn shows_defect(result: &CaseResult) -> bool {
    matches!(
        result.outcome,
        Outcome::Fail | Outcome::Error | Outcome::Timeout
    ) || (result.outcome == Outcome::Observed
        && result.checks.iter().any(|v| v.applicable && !v.passed))
}

impl MutationTable {
    /// A table with no mutant run yet; the cases that fail or show a defect in `baseline` (the
    /// unmutated target's run) can catch no mutant.
    pub fn new(mutants: Vec<Mutant>, baseline: &[CaseResult]) -> MutationTable {
        MutationTable {
            baseline_failures: baseline
                .iter()
                .filter(|r| r.outcome.is_failure() || shows_defect(r))
                .map(|r| r.case.clone())
                .collect(),
            mutants,
            caught: BTreeMap::new(),
            bridges: Vec::new(),
        }
    }

    /// Records a mutant's run.
    pub fn record(&mut self, mutant: &str, results: &[CaseResult]) {
        let caught: BTreeSet<String> = results
            .iter()
            .filter(|r| shows_defect(r) && !self.baseline_failures.contains(&r.case))
            .map(|r| r.case.clone())
            .collect();
        self.caught.insert(mutant.to_string(), caught);
    }

    /// The mutants no case caught: a defect the catalogue cannot see.
    pub fn survivors(&self) -> Vec<&Mutant> {
        self.mutants
            .iter()
            .filter(|m| self.caught.get(&m.name).is_none_or(BTreeSet::is_empty))
            .collect()
    }

    /// Cases that catch no mutant, with the reason their file gives (or none).
    pub fn idle_cases<'a>(&self, catalogue: &'a Catalogue) -> Vec<(&'a str, Option<&'a str>)> {
        let catching: BTreeSet<&String> = self.caught.values().flatten().collect();
        catalogue
            .cases
            .iter()
            .filter(|case| !catching.contains(&case.spec.id))
            .map(|case| (case.spec.id.as_str(), case.spec.no_mutant.as_deref()))
            .collect()
    }

    /// Whether both proofs hold: the baseline passes, every mutant is caught, every case
    /// catches one or says why it cannot.
    pub fn holds(&self, catalogue: &Catalogue) -> bool {
        self.baseline_failures.is_empty()
            && self.survivors().is_empty()
            && self
                .idle_cases(catalogue)
                .iter()
                .all(|(_, why)| why.is_some())
    }

    /// Joins the JSON tables of runs that each covered some of the mutants (a sharded run),
    /// in the order of `order` (the target's own listing). The shapes must agree.
    pub fn merge(
        parts: &[serde_json::Value],
        order: &[Mutant],
    ) -> Result<(MutationTable, Vec<relaycheck_model::Shape>), String> {
        let mut table = MutationTable::default();
        let mut shapes: Option<Vec<relaycheck_model::Shape>> = None;
        for part in parts {
            let part_shapes: Vec<relaycheck_model::Shape> =
                serde_json::from_value(part["shapes"].clone())
                    .map_err(|e| format!("shapes: {e}"))?;
            match &shapes {
                Some(known) if known != &part_shapes => {
                    return Err("the parts were run in different shapes".into());
                }
                _ => shapes = Some(part_shapes),
            }
            let bridges: Vec<(relaycheck_model::Shape, relaycheck_model::Shape)> =
                serde_json::from_value(part["bridges"].clone()).unwrap_or_default();
            if !table.bridges.is_empty() && table.bridges != bridges {
                return Err("the parts were run in different bridged pairs".into());
            }
            table.bridges = bridges;
            for failure in part["baseline_failures"].as_array().into_iter().flatten() {
                if let Some(case) = failure.as_str() {
                    table.baseline_failures.insert(case.to_string());
                }
            }
            for mutant in part["mutants"].as_array().into_iter().flatten() {
                let name = mutant["name"].as_str().ok_or("a mutant without a name")?;
                let caught: BTreeSet<String> = mutant["caught_by"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c.as_str().map(str::to_string))
                    .collect();
                table.caught.insert(name.to_string(), caught);
            }
        }
        for mutant in order {
            if !table.caught.contains_key(&mutant.name) {
                return Err(format!("no part ran the mutant `{}`", mutant.name));
            }
        }
        table.mutants = order.to_vec();
        Ok((table, shapes.unwrap_or_default()))
    }

    /// The table as data, for the test that re-proves it: which cases caught which mutant.
    pub fn to_json(
        &self,
        target: &str,
        shapes: &[relaycheck_model::Shape],
        command: &str,
    ) -> serde_json::Value {
        serde_json::json!({
            "target": target,
            "shapes": shapes,
            "command": command,
            "mutants": self.mutants.iter().map(|m| serde_json::json!({
                "name": m.name,
                "surface": m.surface,
                "defect": m.defect,
                "caught_by": self.caught.get(&m.name).cloned().unwrap_or_default(),
            })).collect::<Vec<_>>(),
            "baseline_failures": self.baseline_failures,
            "bridges": self.bridges,
        })
    }

    /// The table in Markdown (`relaycheck mutants --out`), naming `command` as what regenerates
    /// it.
    pub fn render(&self, catalogue: &Catalogue, target: &str, command: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Mutation table: `{target}`\n");
        let _ = writeln!(
            out,
            "Each mutant is the target started with one deliberate defect; a mutant is caught when \
             at least one case that passes on the unmutated target fails on it.\n\nRegenerate: `{command}`\n"
        );
        let _ = writeln!(
            out,
            "- mutants: {}, caught: {}, survived: {}\n- cases: {}, catching at least one mutant: {}, \
             catching none (with a reason in their file): {}, catching none without a reason: {}\n- cases failing on the unmutated target: {}\n",
            self.mutants.len(),
            self.mutants.len() - self.survivors().len(),
            self.survivors().len(),
            catalogue.cases.len(),
            catalogue.cases.len() - self.idle_cases(catalogue).len(),
            self.idle_cases(catalogue)
                .iter()
                .filter(|(_, why)| why.is_some())
                .count(),
            self.idle_cases(catalogue)
                .iter()
                .filter(|(_, why)| why.is_none())
                .count(),
            self.baseline_failures.len()
        );
        let mut table = Builder::default();
        table.push_record(["mutant", "target surface", "defect", "caught by"]);
        for mutant in &self.mutants {
            let caught = self.caught.get(&mutant.name).cloned().unwrap_or_default();
            let shown = if caught.is_empty() {
                "**SURVIVED**".to_string()
            } else {
                let mut ids: Vec<String> =
                    caught.iter().take(6).map(|id| format!("`{id}`")).collect();
                if caught.len() > 6 {
                    ids.push(format!("and {} more", caught.len() - 6));
                }
                format!("{} case(s): {}", caught.len(), ids.join(", "))
            };
            table.push_record([
                format!("`{}`", mutant.name),
                mutant.surface.clone(),
                mutant.defect.replace('|', "\\|"),
                shown,
            ]);
        }
        let _ = writeln!(
            out,
            "## Mutants\n\n{}\n",
            table.build().with(Style::markdown())
        );

        let mut by_case: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (mutant, cases) in &self.caught {
            for case in cases {
                by_case
                    .entry(case.as_str())
                    .or_default()
                    .push(mutant.as_str());
            }
        }
        let mut table = Builder::default();
        table.push_record(["case", "mutants it catches"]);
        for case in &catalogue.cases {
            let id = case.spec.id.as_str();
            let cell = match (by_case.get(id), &case.spec.no_mutant) {
                (Some(mutants), _) => mutants
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                (None, Some(why)) => format!("none: {why}"),
                (None, None) => "**none, and no reason given**".to_string(),
            };
            table.push_record([format!("`{id}`"), cell]);
        }
        let _ = writeln!(
            out,
            "## Cases\n\n{}\n",
            table.build().with(Style::markdown())
        );
        if !self.baseline_failures.is_empty() {
            let _ = writeln!(out, "## Cases failing on the unmutated target\n");
            for case in &self.baseline_failures {
                let _ = writeln!(out, "- `{case}`");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_of_a_sharded_run_merge_in_listing_order() {
        let order = parse_listing("a\tflat\tx\nb\tbatch\ty\n").unwrap();
        let part = |name: &str, caught: &[&str]| {
            serde_json::json!({"shapes": ["2025-11-25"], "baseline_failures": [],
                "mutants": [{"name": name, "caught_by": caught}]})
        };
        let (table, shapes) =
            MutationTable::merge(&[part("b", &["c/2"]), part("a", &[])], &order).unwrap();
        assert_eq!(shapes.len(), 1);
        assert_eq!(table.mutants[0].name, "a");
        assert_eq!(table.survivors().len(), 1);
        assert!(
            MutationTable::merge(&[part("a", &[])], &order)
                .unwrap_err()
                .contains("`b`")
        );
    }

    #[test]
    fn listings_are_parsed_or_refused_by_line() {
        let mutants = parse_listing("a\tflat\tdrops x\nb\tbatch\tcuts y\n").unwrap();
        assert_eq!(mutants[1].defect, "cuts y");
        assert!(parse_listing("a\tflat\n").unwrap_err().contains("line 1"));
    }
}
