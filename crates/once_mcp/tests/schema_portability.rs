//! Every tool's input and output schema, as `tools/list` lists them, compiles in Ajv's
//! strict mode (`crates/once_mcp/tests/ajv/check.mjs`): Ajv is the validator of the
//! official TypeScript SDKs, which log a warning for each unknown format and, strict,
//! refuse to compile the schema. `./.ci/test` installs the checker's pinned packages
//! (`npm ci` in `crates/once_mcp/tests/ajv`); without them this test fails, naming it.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test writes the schemas to a file and runs node on it"
)]

use std::path::Path;
use std::process::Command;

#[test]
fn every_schema_compiles_in_ajv_strict_mode() {
    let checker = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ajv");
    assert!(
        checker.join("node_modules/ajv").is_dir(),
        "Ajv is not installed in {}: run ./.ci/test, or `npm ci` there",
        checker.display()
    );
    let tools: Vec<serde_json::Value> = once_mcp::tools::registry()
        .iter()
        .map(|tool| tool.listing(true, true))
        .collect();
    assert!(tools.len() > 20, "{} tools", tools.len());
    let dir = tempfile::tempdir().unwrap();
    let listing = dir.path().join("tools.json");
    std::fs::write(&listing, serde_json::to_vec(&tools).unwrap()).unwrap();
    let output = Command::new("node")
        .arg(checker.join("check.mjs"))
        .arg(&listing)
        .output()
        .expect("node runs the Ajv checker (./.ci/toolchains installs it)");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        report.contains(&format!("{} schemas compiled, 0 problems", tools.len() * 2)),
        "{report}"
    );
}
