//! Loading the case catalogue from `specs/` and linting it.
//!
//! Every problem names the file and, where one can be found, the line, because the people who
//! write cases read YAML, not Rust.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use relaycheck_model::Shape;
use relaycheck_model::case::CaseFile;
pub use relaycheck_model::catalogue::{Catalogue, Conformance, LoadedCase, Surface};
use relaycheck_model::results::{CaseEvent, Predicted};
use relaycheck_model::script::NAMED_CANARIES;
use serde::Deserialize;

use relaycheck_checks as checks;
use relaycheck_model::route::RouteName;

/// One problem in a spec file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The spec file the problem is in.
    pub file: PathBuf,
    /// The line, when one can be found: where the YAML parser stopped, or the case's `id:`.
    pub line: Option<usize>,
    /// What is wrong, in words a case writer can act on.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file.display(), line, self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// Every problem found while loading, so one lint run shows them all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecErrors {}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SurfacesFile {
    surfaces: Vec<Surface>,
}

/// Loads and lints `specs_dir` (`surfaces.yaml` and `cases/*.yaml`).
pub fn load(specs_dir: &Path) -> Result<Catalogue, SpecErrors> {
    let mut errors = Vec::new();
    let surfaces = load_surfaces(&specs_dir.join("surfaces.yaml"), &mut errors);
    let shapes = crate::shapes::load_shapes(&specs_dir.join("shapes"), &mut errors);
    let cases_dir = specs_dir.join("cases");
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&cases_dir) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
            .collect(),
        Err(err) => {
            errors.push(SpecError {
                file: cases_dir.clone(),
                line: None,
                message: format!("cannot read the case directory: {err}"),
            });
            Vec::new()
        }
    };
    files.sort();
    let mut read: Vec<PathBuf> = vec![specs_dir.join("surfaces.yaml")];
    read.extend(
        Shape::ALL
            .iter()
            .map(|shape| specs_dir.join(format!("shapes/{}.yaml", shape.as_str()))),
    );
    read.extend(files.iter().cloned());
    let mut cases: Vec<LoadedCase> = Vec::new();
    for file in files {
        match std::fs::read_to_string(&file) {
            Ok(text) => cases.extend(parse_case_file(&file, &text, &mut errors)),
            Err(err) => errors.push(SpecError {
                file: file.clone(),
                line: None,
                message: format!("cannot read: {err}"),
            }),
        }
    }
    for case in &mut cases {
        case.extended = surfaces
            .iter()
            .any(|s| s.id == case.surface && s.conformance == Conformance::Extended);
    }
    let requirements_path = specs_dir.join("../docs/requirements.md");
    let requirements = match relaycheck_report::sources::RequirementsPage::load(&requirements_path)
    {
        Ok(page) => page,
        Err(problem) => {
            errors.push(SpecError {
                file: requirements_path.clone(),
                line: None,
                message: problem,
            });
            relaycheck_report::sources::RequirementsPage::default()
        }
    };
    let catalogue = Catalogue {
        surfaces,
        shapes,
        cases,
        digest: digest_of(specs_dir, &read),
    };
    lint(&catalogue, &mut errors);
    lint_sources(&catalogue, specs_dir, &requirements, &mut errors);
    if errors.is_empty() {
        Ok(catalogue)
    } else {
        Err(SpecErrors(errors))
    }
}

fn lint(catalogue: &Catalogue, errors: &mut Vec<SpecError>) {
    let mut seen: BTreeMap<&str, &LoadedCase> = BTreeMap::new();
    let known_surfaces: Vec<&str> = catalogue.surfaces.iter().map(|s| s.id.as_str()).collect();
    for case in &catalogue.cases {
        let mut report = |message: String| {
            errors.push(SpecError {
                file: case.file.clone(),
                line: case.line,
                message: format!("case `{}`: {message}", case.spec.id),
            })
        };
        if let Some(first) = seen.insert(&case.spec.id, case) {
            report(format!(
                "duplicate id (first at {}:{})",
                first.file.display(),
                first.line.unwrap_or(0)
            ));
        }
        for problem in lint_case(case, &known_surfaces) {
            report(problem);
        }
    }
}

/// Every source (of cases, surfaces, shapes and their defaults) is one a reader can open,
/// and every case's level is no stronger than what it rests on.
fn lint_sources(
    catalogue: &Catalogue,
    specs_dir: &Path,
    requirements: &relaycheck_report::sources::RequirementsPage,
    errors: &mut Vec<SpecError>,
) {
    for case in &catalogue.cases {
        for problem in relaycheck_report::sources::lint_case_source(
            &case.spec.source,
            case.spec.level,
            case.spec.effective_shapes().as_deref(),
            requirements,
        ) {
            errors.push(SpecError {
                file: case.file.clone(),
                line: case.line,
                message: format!("case `{}`: {problem}", case.spec.id),
            });
        }
    }
    let surfaces_file = specs_dir.join("surfaces.yaml");
    for surface in &catalogue.surfaces {
        if let Err(problem) = relaycheck_report::sources::parse(&surface.source) {
            errors.push(SpecError {
                file: surfaces_file.clone(),
                line: None,
                message: format!("surface `{}`: source: {problem}", surface.id),
            });
        }
    }
    for shape in &catalogue.shapes {
        let file = specs_dir.join("shapes").join(format!("{}.yaml", shape.id));
        let sources = std::iter::once(&shape.source)
            .chain(shape.defaults.iter().map(|d| &d.source))
            .chain(shape.own_meta.iter().map(|m| &m.source))
            .chain(shape.unordered.iter().map(|u| &u.source));
        for source in sources {
            if let Err(problem) = relaycheck_report::sources::parse(source) {
                errors.push(SpecError {
                    file: file.clone(),
                    line: None,
                    message: format!("source: {problem}"),
                });
            }
        }
    }
}

/// The case events a run records: each case, with the shapes of the run predicted to move it
/// and what each changes that its checks read. A shape is compared with the one its file names;
/// in a forced run, where the upstream answers in the shape and the target is spoken to in
/// [`crate::target::FORCED_BASELINE`], with that; in a bridged run, with the shape the target
/// is spoken to in (`north`), which its bridge must carry each result into.
pub fn case_events(
    catalogue: &Catalogue,
    shapes: &[Shape],
    forced: bool,
    north: Option<Shape>,
) -> Vec<CaseEvent> {
    catalogue
        .cases
        .iter()
        .map(|case| {
            let mut event = CaseEvent::of(case);
            let runs = |shape: Shape| {
                case.spec.applies_to(shape) && north.is_none_or(|n| case.spec.applies_to(n))
            };
            for &shape in shapes.iter().filter(|shape| runs(**shape)) {
                let against = match (north, forced) {
                    (Some(north), _) => Some(north),
                    (None, true) => Some(crate::target::FORCED_BASELINE),
                    (None, false) => {
                        relaycheck_checks::impact::compared_with(shape, &catalogue.shapes)
                    }
                };
                let Some(against) = against else {
                    continue;
                };
                let fields = relaycheck_checks::impact::predicted(
                    &case.spec,
                    shape,
                    against,
                    &catalogue.shapes,
                );
                if !fields.is_empty() {
                    event.impact.push(Predicted {
                        shape,
                        against,
                        fields,
                    });
                }
            }
            event
        })
        .collect()
}

fn load_surfaces(path: &Path, errors: &mut Vec<SpecError>) -> Vec<Surface> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) => {
            errors.push(SpecError {
                file: path.to_path_buf(),
                line: None,
                message: format!("cannot read: {err}"),
            });
            return Vec::new();
        }
    };
    match parse_yaml::<SurfacesFile>(path, &text) {
        Ok(file) => {
            let mut ids = std::collections::BTreeSet::new();
            for surface in &file.surfaces {
                if !ids.insert(surface.id.as_str()) {
                    errors.push(SpecError {
                        file: path.to_path_buf(),
                        line: line_of(&text, &format!("id: {}", surface.id)),
                        message: format!("duplicate surface `{}`", surface.id),
                    });
                }
            }
            file.surfaces
        }
        Err(error) => {
            errors.push(error);
            Vec::new()
        }
    }
}

/// Parses one case file; problems go to `errors` and the file contributes no cases.
pub fn parse_case_file(file: &Path, text: &str, errors: &mut Vec<SpecError>) -> Vec<LoadedCase> {
    let parsed: CaseFile = match parse_yaml(file, text) {
        Ok(parsed) => parsed,
        Err(error) => {
            errors.push(error);
            return Vec::new();
        }
    };
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if parsed.surface != stem {
        errors.push(SpecError {
            file: file.to_path_buf(),
            line: line_of(text, "surface:"),
            message: format!(
                "surface `{}` does not match the file name `{stem}.yaml`",
                parsed.surface
            ),
        });
    }
    parsed
        .cases
        .into_iter()
        .map(|spec| LoadedCase {
            line: line_of(text, &format!("id: {}", spec.id)),
            surface: parsed.surface.clone(),
            extended: false,
            file: file.to_path_buf(),
            spec,
        })
        .collect()
}

/// Reads YAML in two steps: syntax (where the YAML parser knows the line) into a JSON value,
/// then the typed model with the path of any mismatch, mapped back to a line. The two steps let
/// enums be written as one-key maps (`respond: {result: ...}`), the same form the canary script
/// uses in JSON.
pub fn parse_yaml<T: serde::de::DeserializeOwned>(file: &Path, text: &str) -> Result<T, SpecError> {
    let value: serde_json::Value =
        yaml_serde::from_str(text).map_err(|err| yaml_error(file, &err))?;
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        SpecError {
            file: file.to_path_buf(),
            line: line_of_path(text, err.path()),
            message: format!("at `{path}`: {}", err.inner()),
        }
    })
}

/// The line where the value at `path` is written, found by walking the block-style YAML: a key
/// is the next line that names it, an index the n-th `- ` item after the parent.
fn line_of_path(text: &str, path: &serde_path_to_error::Path) -> Option<usize> {
    use serde_path_to_error::Segment;
    let lines: Vec<&str> = text.lines().collect();
    let mut at = 0usize;
    let mut found = None;
    for segment in path.iter() {
        match segment {
            Segment::Map { key } => {
                let needle = format!("{key}:");
                let hit = (at..lines.len()).find(|&i| {
                    let line = lines[i];
                    line.match_indices(&needle).any(|(pos, _)| {
                        pos == 0 || matches!(line.as_bytes()[pos - 1], b' ' | b'{' | b'-' | b',')
                    })
                })?;
                at = hit;
                found = Some(hit);
            }
            Segment::Seq { index } => {
                let mut indent = None;
                let mut count = 0;
                let mut hit = None;
                for (i, line) in lines.iter().enumerate().skip(at + 1) {
                    let trimmed = line.trim_start();
                    if !trimmed.starts_with("- ") && trimmed != "-" {
                        continue;
                    }
                    let depth = line.len() - trimmed.len();
                    let indent = *indent.get_or_insert(depth);
                    if depth < indent {
                        break;
                    }
                    if depth == indent {
                        if count == *index {
                            hit = Some(i);
                            break;
                        }
                        count += 1;
                    }
                }
                match hit {
                    Some(hit) => {
                        at = hit;
                        found = Some(hit);
                    }
                    None => return found.map(|line| line + 1),
                }
            }
            _ => {}
        }
    }
    found.map(|line| line + 1)
}

fn yaml_error(file: &Path, err: &yaml_serde::Error) -> SpecError {
    SpecError {
        file: file.to_path_buf(),
        line: err.location().map(|loc| loc.line()),
        message: err.to_string(),
    }
}

/// The 1-based line on which `needle` first appears, ignoring leading whitespace and `- `.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let trimmed = line.trim_start().trim_start_matches("- ").trim_end();
            trimmed == needle || trimmed.starts_with(&format!("{needle} "))
        })
        .map(|index| index + 1)
}

fn lint_case(case: &LoadedCase, known_surfaces: &[&str]) -> Vec<String> {
    let spec = &case.spec;
    let mut problems = Vec::new();
    match spec.id.split_once('/') {
        Some((surface, behaviour)) => {
            if surface != case.surface {
                problems.push(format!(
                    "id must start with the file's surface `{}/`",
                    case.surface
                ));
            }
            if !is_kebab(behaviour) {
                problems.push("the behaviour part of the id must be kebab-case".into());
            }
        }
        None => problems.push("id must be `<surface>/<behaviour>`".into()),
    }
    if !known_surfaces.is_empty() && !known_surfaces.contains(&case.surface.as_str()) {
        problems.push(format!(
            "surface `{}` is not in specs/surfaces.yaml",
            case.surface
        ));
    }
    if spec.requirement.trim().is_empty() {
        problems.push("requirement is empty".into());
    }
    if spec.source.trim().is_empty() {
        problems.push("source is empty".into());
    }
    match (&spec.tool.canary, &spec.tool.respond) {
        (Some(_), Some(_)) => problems.push("tool: give `canary` or `respond`, not both".into()),
        (None, None) => problems.push("tool: give `canary` or `respond`".into()),
        (Some(named), None) if !NAMED_CANARIES.contains(&named.as_str()) => problems.push(format!(
            "tool: unknown canary `{named}` (known: {})",
            NAMED_CANARIES.join(", ")
        )),
        _ => {}
    }
    if spec.routes.is_empty() {
        problems.push("routes is empty".into());
    }
    for route in &spec.routes {
        if RouteName::named(route).is_none() {
            problems.push(format!(
                "unknown route `{route}` (known: {})",
                RouteName::known()
            ));
        }
    }
    if spec.shapes.as_ref().is_some_and(Vec::is_empty) {
        problems.push("shapes is empty: leave it out to apply to every shape".into());
    }
    for (header, value) in &spec.tool.north_headers {
        let token = !header.is_empty()
            && header
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token {
            problems.push(format!(
                "tool.north_headers: `{header}` is not a header name"
            ));
        }
        let printable = |v: &str| v.bytes().all(|b| (0x20..0x7f).contains(&b));
        if !(value.is_null() || value.as_str().is_some_and(printable)) {
            problems.push(format!(
                "tool.north_headers.{header}: a header's value is a string of printable ASCII, or null to leave it out"
            ));
        }
    }
    if let Some(schema) = &spec.tool.input_schema
        && let Err(why) = relaycheck_model::headers::param_headers(schema)
    {
        problems.push(format!(
            "tool.input_schema: {why}: a client over streamable HTTP leaves such a tool out of its listing"
        ));
    }
    if spec.expect.is_empty() {
        problems.push("expect is empty: a case that checks nothing cannot fail".into());
    }
    for expectation in &spec.expect {
        if let Err(problem) = checks::validate(expectation) {
            problems.push(problem);
        }
    }
    problems
}

fn is_kebab(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('-')
        && !text.ends_with('-')
        && !text.contains("--")
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The digest of [`Catalogue::digest`]. A file that cannot be read counts as empty: loading
/// has reported it already.
fn digest_of(specs_dir: &Path, files: &[PathBuf]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for file in files {
        let name = file.strip_prefix(specs_dir).unwrap_or(file);
        let bytes = std::fs::read(file).unwrap_or_default();
        hash.update(name.to_string_lossy().as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    let hex: String = hash
        .finalize()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Vec<LoadedCase>, Vec<SpecError>) {
        let mut errors = Vec::new();
        let cases = parse_case_file(Path::new("specs/cases/flat-return.yaml"), text, &mut errors);
        (cases, errors)
    }

    #[test]
    fn a_yaml_error_names_file_and_line() {
        let (_, errors) = parse("surface: flat-return\ncases:\n  - id: x\n    level: sometimes\n");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].file, Path::new("specs/cases/flat-return.yaml"));
        assert_eq!(errors[0].line, Some(4), "{}", errors[0]);
        assert!(errors[0].to_string().contains("flat-return.yaml:4"));
    }

    #[test]
    fn cases_carry_their_line_and_lint_names_it() {
        let text = "surface: flat-return\ncases:\n  - id: flat-return/Bad_Name\n    level: must\n    requirement: r\n    source: s\n    tool: {canary: nope}\n    routes: [sideways]\n    expect: [{check: no-such-check}]\n";
        let (cases, errors) = parse(text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(cases[0].line, Some(3));
        let problems = lint_case(&cases[0], &[]);
        let joined = problems.join("\n");
        assert!(joined.contains("kebab-case"), "{joined}");
        assert!(joined.contains("unknown canary `nope`"), "{joined}");
        assert!(joined.contains("unknown route `sideways`"), "{joined}");
        assert!(joined.contains("no-such-check"), "{joined}");
    }

    #[test]
    fn surface_must_match_file_name() {
        let (_, errors) = parse("surface: other\ncases: []\n");
        assert_eq!(errors[0].line, Some(1));
    }

    #[test]
    fn kebab_is_strict() {
        assert!(is_kebab("keeps-meta-2"));
        assert!(!is_kebab("Keeps"));
        assert!(!is_kebab("a--b"));
        assert!(!is_kebab("-a"));
    }

    #[test]
    fn every_case_file_matches_the_published_schema() {
        let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        let schema: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(specs.join("schema/case-file.schema.json")).unwrap(),
        )
        .unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut checked = 0;
        for entry in std::fs::read_dir(specs.join("cases")).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let value: serde_json::Value = yaml_serde::from_str(&text).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&value)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            checked += 1;
        }
        assert!(checked > 0);
        let broken: serde_json::Value =
            serde_json::json!({"surface": "x", "cases": [{"id": "x/y"}]});
        assert!(
            !validator.is_valid(&broken),
            "the schema must refuse an incomplete case"
        );
        let case = |expect: serde_json::Value| {
            serde_json::json!({"surface": "x", "cases": [{"id": "x/y", "level": "must",
                "requirement": "r", "source": "s", "tool": {"canary": "echo"}, "expect": [expect]}]})
        };
        assert!(validator.is_valid(&case(
            serde_json::json!({"check": "is-error", "value": true})
        )));
        for wrong in [
            serde_json::json!({"check": "no-such-check"}),
            serde_json::json!({"check": "is-error", "value": "yes"}),
            serde_json::json!({"check": "is-error", "valu": true}),
            serde_json::json!({"check": "answered-as"}),
        ] {
            assert!(
                !validator.is_valid(&case(wrong.clone())),
                "accepted {wrong}"
            );
        }
    }

    #[test]
    fn the_repository_catalogue_lints_clean() {
        let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../specs");
        if let Err(errors) = load(&specs) {
            panic!("{errors}");
        }
    }

    #[test]
    fn the_digest_follows_the_bytes_of_every_file_read() {
        let dir = std::env::temp_dir().join(format!("relaycheck-digest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cases")).unwrap();
        std::fs::create_dir_all(dir.join("shapes")).unwrap();
        std::fs::write(dir.join("surfaces.yaml"), "surfaces: []\n").unwrap();
        std::fs::write(dir.join("cases/a.yaml"), "cases: []\n").unwrap();
        let read = |dir: &Path| {
            let mut files = vec![dir.join("surfaces.yaml"), dir.join("cases/a.yaml")];
            files.extend(
                Shape::ALL
                    .iter()
                    .map(|s| dir.join(format!("shapes/{}.yaml", s.as_str()))),
            );
            digest_of(dir, &files)
        };
        let first = read(&dir);
        assert!(
            first.starts_with("sha256:") && first.len() == 7 + 16,
            "{first}"
        );
        assert_eq!(read(&dir), first, "the same bytes, the same digest");
        std::fs::write(dir.join("cases/a.yaml"), "cases: [] \n").unwrap();
        let changed = read(&dir);
        assert_ne!(changed, first, "one byte more in a case file");
        // Where the bytes are counts too: the same text under another file's name differs.
        std::fs::write(dir.join("cases/a.yaml"), "cases: []\n").unwrap();
        std::fs::write(dir.join("surfaces.yaml"), "").unwrap();
        std::fs::write(dir.join("shapes/2025-06-18.yaml"), "surfaces: []\n").unwrap();
        assert_ne!(read(&dir), first);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
