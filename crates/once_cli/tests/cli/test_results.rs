//! `once query test-results`: the record a test's run left under its `results_path`,
//! read back and checked (human, JSON, `--summary-only`), and every way it can be
//! missing or wrong: no run yet, not a test, not JSON, inconsistent, a link.

use expect_test::expect;
use once_test_results::{Artifacts, NativeFormat, Outcome as RunOutcome, Runner, assemble};

use crate::support::{Once, Workspace, check};

const TARGET: &str = "libs/text/TextTest";
const RESULTS: &str = ".once/out/libs/text/TextTest/test/test_results.json";

const LIBTEST: &str = "\
running 3 tests
test tests::shouts ... ok
test tests::whispers ... FAILED
test tests::later ... ignored, slow

failures:

---- tests::whispers stdout ----

thread 'tests::whispers' (1) panicked at src/lib.rs:12:9:
assertion `left == right` failed
  left: \"HI\"
 right: \"hi\"

failures:
    tests::whispers

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

fn with_results() -> Workspace {
    let demo = Workspace::copy("demo");
    let record = assemble(
        TARGET,
        Runner::named("libtest"),
        NativeFormat::Libtest.parse(LIBTEST),
        &RunOutcome {
            exit_code: Some(101),
            timed_out: false,
            log: ".once/out/libs/text/TextTest/test/log.txt".to_owned(),
            cwd: "libs/text".to_owned(),
            allow_no_cases: false,
        },
        Artifacts {
            logs: vec![".once/out/libs/text/TextTest/test/log.txt".to_owned()],
            native_results: Vec::new(),
        },
        &demo.root().display().to_string(),
    );
    demo.write(RESULTS, &serde_json::to_string_pretty(&record).unwrap());
    demo
}

#[test]
fn a_record_reads_back_as_text_json_and_summary() {
    let demo = with_results();
    check(
        &[
            Once::at(&demo, &["query", "test-results", TARGET]),
            Once::at(&demo, &["query", "test-results", TARGET, "--summary-only"]),
            Once::at(
                &demo,
                &[
                    "query",
                    "test-results",
                    TARGET,
                    "--summary-only",
                    "--format",
                    "json",
                ],
            ),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query test-results libs/text/TextTest
            exit: 0
            --- stdout
            FAIL libs/text/TextTest (libtest) 3 cases: 1 passed, 1 failed, 1 skipped, 0 flaky
              FAIL tests::whispers libs/text/src/lib.rs:12
                  thread 'tests::whispers' (1) panicked at src/lib.rs:12:9:
                  assertion `left == right` failed
                    left: "HI"
                   right: "hi"
              log: .once/out/libs/text/TextTest/test/log.txt
            --- stderr

            $ once -C $WORKSPACE query test-results libs/text/TextTest --summary-only
            exit: 0
            --- stdout
            FAIL libs/text/TextTest (libtest) 3 cases: 1 passed, 1 failed, 1 skipped, 0 flaky
              log: .once/out/libs/text/TextTest/test/log.txt
            --- stderr

            $ once -C $WORKSPACE query test-results libs/text/TextTest --summary-only --format json
            exit: 0
            --- stdout
            {
              "schema": "once.test_results_summary.v1",
              "source_schema": "once.test_results.v1",
              "target": "libs/text/TextTest",
              "runner": {
                "type": "libtest",
                "metadata": {
                  "exit_code": 101
                }
              },
              "status": "failed",
              "summary": {
                "total": 3,
                "passed": 1,
                "failed": 1,
                "skipped": 1,
                "flaky": 0
              },
              "artifacts": {
                "logs": [
                  ".once/out/libs/text/TextTest/test/log.txt"
                ],
                "native_results": []
              }
            }
            --- stderr
        "#]],
    );
    let full = Once::at(
        &demo,
        &["query", "test-results", TARGET, "--format", "json"],
    )
    .run();
    let json = full.json();
    assert_eq!(json["schema"], "once.test_results.v1");
    assert_eq!(json["cases"].as_array().unwrap().len(), 3);
}

#[test]
fn missing_foreign_and_broken_records_are_clear_errors() {
    let demo = Workspace::copy("demo");
    let not_run = Once::at(&demo, &["query", "test-results", TARGET]);
    let not_a_test = Once::at(&demo, &["query", "test-results", "libs/text/Text"]);
    let unknown = Once::at(&demo, &["query", "test-results", "libs/text/Nope"]);
    demo.write(
        ".once/out/libs/greeting/GreetingTest/test/test_results.json",
        "{\"schema\": \"once.test_results.v1\",",
    );
    let truncated = Once::at(
        &demo,
        &["query", "test-results", "libs/greeting/GreetingTest"],
    );
    demo.write(
        ".once/out/tools/ReleaseTest/test/test_results.json",
        r#"{"schema":"once.test_results.v2","target":"tools/Other","runner":{"type":"sh","metadata":{}},
            "status":"passed","summary":{"total":1,"passed":1,"failed":0,"skipped":0,"flaky":0},
            "cases":[{"id":"a","name":"a","suite":"","status":"failed","attempts":[],"runner_metadata":{}}],
            "artifacts":{"logs":[],"native_results":[]}}"#,
    );
    let inconsistent = Once::at(&demo, &["query", "test-results", "tools/ReleaseTest"]);
    check(
        &[not_run, not_a_test, unknown, truncated, inconsistent],
        &expect![[r#"
            $ once -C $WORKSPACE query test-results libs/text/TextTest
            exit: 2
            --- stdout
            --- stderr
            once: error: `libs/text/TextTest` has no results yet (`.once/out/libs/text/TextTest/test/test_results.json` does not exist): run `once test libs/text/TextTest`

            $ once -C $WORKSPACE query test-results libs/text/Text
            exit: 2
            --- stdout
            --- stderr
            once: error: `libs/text/Text` has no `test` capability; `once query tests` lists the test targets

            $ once -C $WORKSPACE query test-results libs/text/Nope
            exit: 2
            --- stdout
            --- stderr
            once: error: no target `libs/text/Nope` in the workspace; did you mean `libs/text/Text`?

            $ once -C $WORKSPACE query test-results libs/greeting/GreetingTest
            exit: 2
            --- stdout
            --- stderr
            once: error: cannot read `.once/out/libs/greeting/GreetingTest/test/test_results.json`: not a `once.test_results.v1` record: EOF while parsing a value at line 1 column 34

            $ once -C $WORKSPACE query test-results tools/ReleaseTest
            exit: 2
            --- stdout
            --- stderr
            once: error: cannot read `.once/out/tools/ReleaseTest/test/test_results.json`: the `once.test_results.v1` record is inconsistent:
            - `schema` is `once.test_results.v2`, not `once.test_results.v1`
            - `target` is `tools/Other`, not `tools/ReleaseTest`
            - case `a` has no attempt
            - `summary` says 1 total, 1 passed, 0 failed, 0 skipped, 0 flaky while the cases give 1 total, 0 passed, 1 failed, 0 skipped, 0 flaky
            - `status` is `passed` while the cases make it `failed`
        "#]],
    );
}

#[test]
fn a_results_file_that_is_a_link_is_refused() {
    let demo = with_results();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("results.json");
    std::fs::rename(demo.root().join(RESULTS), &target).unwrap();
    std::os::unix::fs::symlink(&target, demo.root().join(RESULTS)).unwrap();
    let outcome = Once::at(&demo, &["query", "test-results", TARGET]).run();
    assert_eq!(outcome.code, 2, "{}", outcome.render());
    assert!(
        outcome
            .stderr
            .contains("cannot read `.once/out/libs/text/TextTest/test/test_results.json`"),
        "{}",
        outcome.render()
    );
}

#[test]
fn artifacts_outside_the_workspace_are_refused_by_name() {
    // A record a project kind's action wrote, naming files outside the workspace as its
    // logs: `once` never prints them as the test's logs.
    let demo = Workspace::copy("demo");
    demo.write(
        RESULTS,
        r#"{"schema":"once.test_results.v1","target":"libs/text/TextTest","runner":{"type":"sh","metadata":{}},
            "status":"passed","summary":{"total":1,"passed":1,"failed":0,"skipped":0,"flaky":0},
            "cases":[{"id":"a","name":"a","suite":"","status":"passed","attempts":[{"status":"passed","duration_ms":null}],"runner_metadata":{}}],
            "artifacts":{"logs":["/etc/shadow","../../../etc/passwd"],"native_results":["ok/../../x.xml"]}}"#,
    );
    check(
        &[Once::at(&demo, &["query", "test-results", TARGET])],
        &expect![[r#"
            $ once -C $WORKSPACE query test-results libs/text/TextTest
            exit: 2
            --- stdout
            --- stderr
            once: error: cannot read `.once/out/libs/text/TextTest/test/test_results.json`: the `once.test_results.v1` record is inconsistent:
            - `artifacts.logs[0]` `/etc/shadow` is absolute: artifacts are paths inside the workspace, relative to its root
            - `artifacts.logs[1]` `../../../etc/passwd` goes through `..`: artifacts are paths inside the workspace, relative to its root
            - `artifacts.native_results[0]` `ok/../../x.xml` goes through `..`: artifacts are paths inside the workspace, relative to its root
        "#]],
    );
}
