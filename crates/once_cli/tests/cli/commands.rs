//! Every `once query` command on a copy of `test_data/demo`, plus flags, workspace
//! discovery, errors and the non-query commands.

use expect_test::{expect, expect_file};

use crate::support::{Once, Workspace, check};

fn demo() -> Workspace {
    Workspace::copy("demo")
}

#[test]
fn demo_is_valid_without_any_diagnostic() {
    let demo = demo();
    let outcomes = check(
        &[
            Once::at(&demo, &["query", "validate-workspace", "--format", "json"]),
            Once::at(&demo, &["query", "validate-workspace"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query validate-workspace --format json
            exit: 0
            --- stdout
            {
              "valid": true,
              "target_count": 17,
              "diagnostics": []
            }
            --- stderr

            $ once -C $WORKSPACE query validate-workspace
            exit: 0
            --- stdout
            workspace valid: 17 targets
            --- stderr
        "#]],
    );
    assert_eq!(outcomes[0].json()["diagnostics"], serde_json::json!([]));
}

#[test]
fn workspace() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "workspace"]),
            Once::at(&demo, &["query", "workspace", "--format", "json"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query workspace
            exit: 0
            --- stdout
            workspace: $WORKSPACE
            configuration: linux-x86_64 [linux-x86_64, linux, x86_64, release, default]
            root manifest: once.toml (present)
            packages: 9 (., apps/greeter, data, libs/greeting, libs/greeting-js, libs/shout, libs/text, tools, tools/msgcheck)
            targets: 17
            diagnostics: 0 errors, 0 warnings
            --- stderr

            $ once -C $WORKSPACE query workspace --format json
            exit: 0
            --- stdout
            {
              "root": "$WORKSPACE",
              "configuration": {
                "os": "linux",
                "arch": "x86_64",
                "tokens": [
                  "linux-x86_64",
                  "linux",
                  "x86_64",
                  "release",
                  "default"
                ]
              },
              "root_manifest": {
                "path": "once.toml",
                "exists": true
              },
              "target_count": 17,
              "packages": [
                "",
                "apps/greeter",
                "data",
                "libs/greeting",
                "libs/greeting-js",
                "libs/shout",
                "libs/text",
                "tools",
                "tools/msgcheck"
              ],
              "empty": false,
              "module_paths": [],
              "diagnostics": {
                "errors": 0,
                "warnings": 0
              }
            }
            --- stderr
        "#]],
    );
}

#[test]
fn targets() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "targets"]),
            Once::at(&demo, &["query", "targets", "--format", "json"]),
        ],
        &expect_file!["../snapshots/commands/targets.txt"],
    );
}

#[test]
fn targets_of_one_kind() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "targets", "--kind", "sh_test"]),
            Once::at(
                &demo,
                &["query", "targets", "--kind", "sh_test", "--format", "json"],
            ),
            Once::at(&demo, &["query", "targets", "--kind", "sh_binary"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query targets --kind sh_test
            exit: 0
            --- stdout
            targets (2):
              apps/greeter/GreeterSmokeTest (sh_test) [build, test]
              tools/ReleaseTest (sh_test) [build, test]
            --- stderr

            $ once -C $WORKSPACE query targets --kind sh_test --format json
            exit: 0
            --- stdout
            [
              {
                "id": "apps/greeter/GreeterSmokeTest",
                "package": "apps/greeter",
                "name": "GreeterSmokeTest",
                "kind": "sh_test",
                "deps": [
                  "apps/greeter/Greeter",
                  "data/Messages"
                ],
                "capabilities": [
                  "build",
                  "test"
                ]
              },
              {
                "id": "tools/ReleaseTest",
                "package": "tools",
                "name": "ReleaseTest",
                "kind": "sh_test",
                "deps": [
                  "tools/Release"
                ],
                "capabilities": [
                  "build",
                  "test"
                ]
              }
            ]
            --- stderr

            $ once -C $WORKSPACE query targets --kind sh_binary
            exit: 0
            --- stdout
            targets: none
            --- stderr
        "#]],
    );
}

#[test]
fn target() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "target", "apps/greeter/Greeter"]),
            Once::at(
                &demo,
                &[
                    "query",
                    "target",
                    "apps/greeter/Greeter",
                    "--format",
                    "json",
                ],
            ),
            Once::at(&demo, &["query", "target", "tools/Banner"]),
        ],
        &expect_file!["../snapshots/commands/target.txt"],
    );
}

#[test]
fn inputs() {
    let demo = demo();
    check(
        &[
            Once::at(
                &demo,
                &[
                    "query",
                    "inputs",
                    "apps/greeter/Greeter",
                    "libs/greeting/Greeting",
                ],
            ),
            Once::at(
                &demo,
                &[
                    "query",
                    "inputs",
                    "apps/greeter/Greeter",
                    "--format",
                    "json",
                ],
            ),
            Once::at(&demo, &["query", "inputs", "apps/greeter/Greter"]),
        ],
        &expect_file!["../snapshots/commands/inputs.txt"],
    );
}

#[test]
fn capabilities() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "capabilities", "libs/text/TextTest"]),
            Once::at(
                &demo,
                &[
                    "query",
                    "capabilities",
                    "apps/greeter/Greeter",
                    "--format",
                    "json",
                ],
            ),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query capabilities libs/text/TextTest
            exit: 0
            --- stdout
            libs/text/TextTest (rust_test)
            capabilities:
              build
                outputs: default
              test
                outputs: test_results
                requires: default
            --- stderr

            $ once -C $WORKSPACE query capabilities apps/greeter/Greeter --format json
            exit: 0
            --- stdout
            {
              "id": "apps/greeter/Greeter",
              "kind": "rust_binary",
              "capabilities": [
                {
                  "name": "build",
                  "output_groups": [
                    "default"
                  ],
                  "requires_outputs": []
                },
                {
                  "name": "run",
                  "output_groups": [
                    "default"
                  ],
                  "requires_outputs": [
                    "default"
                  ]
                }
              ]
            }
            --- stderr
        "#]],
    );
}

#[test]
fn schema() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "schema", "rust_binary"]),
            Once::at(
                &demo,
                &["query", "schema", "rust_binary", "--format", "json"],
            ),
        ],
        &expect_file!["../snapshots/commands/schema.txt"],
    );
}

#[test]
fn example() {
    let demo = demo();
    check(
        &[
            Once::at(
                &demo,
                &[
                    "query",
                    "example",
                    "rust_binary",
                    "rust-binary-with-library",
                ],
            ),
            Once::at(
                &demo,
                &[
                    "query",
                    "example",
                    "rust_binary",
                    "rust-binary-minimal",
                    "--format",
                    "json",
                ],
            ),
        ],
        &expect_file!["../snapshots/commands/example.txt"],
    );
}

/// The human answer shows every file's contents under a header, the same text as the
/// JSON answer's `contents`, so a starter can be read without `--format json`.
#[test]
fn example_files_come_with_their_contents() {
    let demo = demo();
    for (kind, slug) in [
        ("command", "command-generate-file"),
        ("c_test", "c-test-minimal"),
        ("pytest_test", "python-package-with-tests"),
    ] {
        let human = Once::at(&demo, &["query", "example", kind, slug]).run();
        let json = Once::at(&demo, &["query", "example", kind, slug, "--format", "json"]).run();
        assert_eq!((human.code, json.code), (0, 0), "{}", human.render());
        let files = json.json()["files"].as_array().unwrap().clone();
        assert!(!files.is_empty(), "{slug}");
        let mut expected = String::new();
        for file in &files {
            let contents = file["contents"].as_str().unwrap();
            expected.push_str(&format!(
                "\n==> {} <==\n{contents}",
                file["path"].as_str().unwrap()
            ));
            if !contents.is_empty() && !contents.ends_with('\n') {
                expected.push('\n');
            }
        }
        assert!(
            human.stdout.ends_with(&expected),
            "{slug}: the files after the list should read\n{expected}\n--- but the answer is\n{}",
            human.stdout
        );
    }
}

#[test]
fn target_kinds() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "target-kinds"]),
            Once::at(&demo, &["query", "target-kinds", "--query", "rust"]),
            Once::at(
                &demo,
                &[
                    "query",
                    "kinds",
                    "--query",
                    "shell tests",
                    "--format",
                    "json",
                ],
            ),
        ],
        &expect_file!["../snapshots/commands/target_kinds.txt"],
    );
}

#[test]
fn tests() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "tests"]),
            Once::at(&demo, &["query", "tests", "--format", "json"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query tests
            exit: 0
            --- stdout
            tests (8):
              apps/greeter/GreeterSmokeTest (sh_test) runner=sh [smoke]
              libs/greeting-js/GreetingJsTest (node_test) runner=node [unit]
              libs/greeting/GreetingIntegrationTest (rust_test) runner=cargo [integration]
              libs/greeting/GreetingTest (rust_test) runner=cargo
              libs/shout/ShoutTest (c_test) runner=exe
              libs/text/TextTest (rust_test) runner=cargo
              tools/ReleaseTest (sh_test) runner=sh
              tools/msgcheck/MsgCheckTest (pytest_test) runner=pytest [unit]
            --- stderr

            $ once -C $WORKSPACE query tests --format json
            exit: 0
            --- stdout
            [
              {
                "id": "apps/greeter/GreeterSmokeTest",
                "kind": "sh_test",
                "deps": [
                  "apps/greeter/Greeter",
                  "data/Messages"
                ],
                "runner": "sh",
                "labels": [
                  "smoke"
                ],
                "results_path": ".once/out/apps/greeter/GreeterSmokeTest/test/test_results.json"
              },
              {
                "id": "libs/greeting-js/GreetingJsTest",
                "kind": "node_test",
                "deps": [
                  "libs/greeting-js/GreetingJs"
                ],
                "runner": "node",
                "labels": [
                  "unit"
                ],
                "results_path": ".once/out/libs/greeting-js/GreetingJsTest/test/test_results.json"
              },
              {
                "id": "libs/greeting/GreetingIntegrationTest",
                "kind": "rust_test",
                "deps": [
                  "libs/greeting/Greeting"
                ],
                "runner": "cargo",
                "labels": [
                  "integration"
                ],
                "results_path": ".once/out/libs/greeting/GreetingIntegrationTest/test/test_results.json"
              },
              {
                "id": "libs/greeting/GreetingTest",
                "kind": "rust_test",
                "deps": [
                  "libs/text/Text",
                  "libs/greeting/Greeting"
                ],
                "runner": "cargo",
                "labels": [],
                "results_path": ".once/out/libs/greeting/GreetingTest/test/test_results.json"
              },
              {
                "id": "libs/shout/ShoutTest",
                "kind": "c_test",
                "deps": [
                  "libs/shout/Shout"
                ],
                "runner": "exe",
                "labels": [],
                "results_path": ".once/out/libs/shout/ShoutTest/test/test_results.json"
              },
              {
                "id": "libs/text/TextTest",
                "kind": "rust_test",
                "deps": [
                  "libs/text/Text"
                ],
                "runner": "cargo",
                "labels": [],
                "results_path": ".once/out/libs/text/TextTest/test/test_results.json"
              },
              {
                "id": "tools/ReleaseTest",
                "kind": "sh_test",
                "deps": [
                  "tools/Release"
                ],
                "runner": "sh",
                "labels": [],
                "results_path": ".once/out/tools/ReleaseTest/test/test_results.json"
              },
              {
                "id": "tools/msgcheck/MsgCheckTest",
                "kind": "pytest_test",
                "deps": [
                  "tools/msgcheck/MsgCheck"
                ],
                "runner": "pytest",
                "labels": [
                  "unit"
                ],
                "results_path": ".once/out/tools/msgcheck/MsgCheckTest/test/test_results.json"
              }
            ]
            --- stderr
        "#]],
    );
}

/// A library whose `srcs` leave its tests out (`["*.sh", "!*_test.sh", …]`): its inputs
/// and the tests a change affects follow the list, and of two new files, the one the
/// positive pattern selects becomes the library's input, the one the exclusion leaves
/// out does not.
#[test]
fn inputs_and_affected_tests_follow_exclusions() {
    let workspace = Workspace::copy("workspaces/unused_exclusion");
    let inputs = || {
        Once::at(
            &workspace,
            &[
                "query",
                "inputs",
                "greeting/Greeting",
                "greeting/GreetingTest",
            ],
        )
    };
    let affected = |path: &str| Once::at(&workspace, &["query", "affected-tests", path]);
    check(
        &[inputs(), affected("greeting/greet_test.sh")],
        &expect![[r#"
            $ once -C $WORKSPACE query inputs greeting/Greeting greeting/GreetingTest
            exit: 0
            --- stdout
            greeting/Greeting f7ed22c3f2f6d785a40803c289d9a7f1def40fcba7e57ba9c23e7d237cec1d2f
              82d84184bbdabaf30ef63401a599f003836835c2a51d02ab495c0725a71a59ae  greeting/greet.sh
              baddd6f3d5fecda95e1914901d09d9b36e51bf687664a5ca5a70b49920373ff5  greeting/once.toml
            greeting/GreetingTest b8bec4f40468eb0cfe64f9eb852dca31fa9a328a1a811907dbdd3d92babb036e
              3500d19336b0f71452cab89777fd764bc86d9d2357849341f02b5f370e078ed5  greeting/greet_test.sh
              baddd6f3d5fecda95e1914901d09d9b36e51bf687664a5ca5a70b49920373ff5  greeting/once.toml
            --- stderr

            $ once -C $WORKSPACE query affected-tests greeting/greet_test.sh
            exit: 0
            --- stdout
            affected tests (1):
              greeting/GreetingTest (sh_test)
                - changed test input `greeting/greet_test.sh`
            --- stderr
        "#]],
    );
    workspace.write("greeting/extra.sh", "extra() { :; }\n");
    workspace.write("greeting/extra_test.sh", "true\n");
    check(
        &[
            inputs(),
            affected("greeting/extra.sh"),
            affected("greeting/extra_test.sh"),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query inputs greeting/Greeting greeting/GreetingTest
            exit: 0
            --- stdout
            greeting/Greeting 40394991266b7213deb317cf481818406b9535435ee668136d5b79322cc4da07
              49402dd13b8457b12a2ad8029c47f241a2fd823718f1a183f2ff8fff705a20a7  greeting/extra.sh
              82d84184bbdabaf30ef63401a599f003836835c2a51d02ab495c0725a71a59ae  greeting/greet.sh
              baddd6f3d5fecda95e1914901d09d9b36e51bf687664a5ca5a70b49920373ff5  greeting/once.toml
            greeting/GreetingTest 632a46b9a2f5b23b9a7f55ca46571762d180378a0676556b9339d37483b4158d
              a17fcf0a2f50e2d495e4f90ce263410edc183add6c62699a2facbccf60410f74  greeting/extra_test.sh
              3500d19336b0f71452cab89777fd764bc86d9d2357849341f02b5f370e078ed5  greeting/greet_test.sh
              baddd6f3d5fecda95e1914901d09d9b36e51bf687664a5ca5a70b49920373ff5  greeting/once.toml
            --- stderr

            $ once -C $WORKSPACE query affected-tests greeting/extra.sh
            exit: 0
            --- stdout
            affected tests (1):
              greeting/GreetingTest (sh_test)
                - depends on `greeting/Greeting`, whose input `greeting/extra.sh` changed
            --- stderr

            $ once -C $WORKSPACE query affected-tests greeting/extra_test.sh
            exit: 0
            --- stdout
            affected tests (1):
              greeting/GreetingTest (sh_test)
                - changed test input `greeting/extra_test.sh`
            --- stderr
        "#]],
    );
}

/// A source deep in the chain (`libs/text`) selects every test above it, with reasons.
#[test]
fn affected_tests_of_a_deep_source() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "affected-tests", "libs/text/src/lib.rs"]),
            Once::at(
                &demo,
                &[
                    "query",
                    "affected-tests",
                    "libs/text/src/lib.rs",
                    "--format",
                    "json",
                ],
            ),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query affected-tests libs/text/src/lib.rs
            exit: 0
            --- stdout
            affected tests (4):
              apps/greeter/GreeterSmokeTest (sh_test)
                - depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed
              libs/greeting/GreetingIntegrationTest (rust_test)
                - depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed
              libs/greeting/GreetingTest (rust_test)
                - depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed
              libs/text/TextTest (rust_test)
                - changed test input `libs/text/src/lib.rs`
                - depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed
            --- stderr

            $ once -C $WORKSPACE query affected-tests libs/text/src/lib.rs --format json
            exit: 0
            --- stdout
            {
              "tests": [
                {
                  "id": "apps/greeter/GreeterSmokeTest",
                  "kind": "sh_test",
                  "reasons": [
                    "depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed"
                  ]
                },
                {
                  "id": "libs/greeting/GreetingIntegrationTest",
                  "kind": "rust_test",
                  "reasons": [
                    "depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed"
                  ]
                },
                {
                  "id": "libs/greeting/GreetingTest",
                  "kind": "rust_test",
                  "reasons": [
                    "depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed"
                  ]
                },
                {
                  "id": "libs/text/TextTest",
                  "kind": "rust_test",
                  "reasons": [
                    "changed test input `libs/text/src/lib.rs`",
                    "depends on `libs/text/Text`, whose input `libs/text/src/lib.rs` changed"
                  ]
                }
              ],
              "warnings": []
            }
            --- stderr
        "#]],
    );
}

#[test]
fn affected_tests_of_other_changes() {
    let demo = demo();
    check(
        &[
            // A data file reaches the smoke test through the filegroup.
            Once::at(
                &demo,
                &[
                    "query",
                    "affected-tests",
                    "--changed-path",
                    "data/messages/fr.txt",
                ],
            ),
            // A manifest change selects the package's tests; `./` and a generator input too.
            Once::at(
                &demo,
                &[
                    "query",
                    "affected-tests",
                    "./tools/once.toml",
                    "apps/greeter/src/main.rs",
                ],
            ),
            // A file no target owns selects nothing.
            Once::at(&demo, &["query", "affected-tests", "README.md"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query affected-tests --changed-path data/messages/fr.txt
            exit: 0
            --- stdout
            affected tests (1):
              apps/greeter/GreeterSmokeTest (sh_test)
                - depends on `data/Messages`, whose input `data/messages/fr.txt` changed
            --- stderr

            $ once -C $WORKSPACE query affected-tests ./tools/once.toml apps/greeter/src/main.rs
            exit: 0
            --- stdout
            affected tests (2):
              apps/greeter/GreeterSmokeTest (sh_test)
                - depends on `apps/greeter/Greeter`, whose input `apps/greeter/src/main.rs` changed
              tools/ReleaseTest (sh_test)
                - changed manifest `tools/once.toml`
                - depends on `tools/Banner`, whose manifest `tools/once.toml` changed
                - depends on `tools/Release`, whose manifest `tools/once.toml` changed
            --- stderr

            $ once -C $WORKSPACE query affected-tests README.md
            exit: 0
            --- stdout
            affected tests: none
            --- stderr
        "#]],
    );
}

/// Spellings of one path select the same tests; paths outside the workspace (or in no
/// package) are warnings in the answer, not a silent "none".
#[test]
fn affected_tests_normalise_paths_and_warn_about_the_rest() {
    let demo = demo();
    let absolute = demo.root().join("libs/text/src/lib.rs");
    let absolute = absolute.to_str().expect("a UTF-8 path");
    let canonical = Once::at(
        &demo,
        &[
            "query",
            "affected-tests",
            "--format",
            "json",
            "libs/text/src/lib.rs",
        ],
    )
    .run()
    .json();
    assert_eq!(canonical["tests"].as_array().map(Vec::len), Some(4));
    for spelling in [
        "libs/text/./src/lib.rs",
        "libs//text/src/lib.rs",
        "libs/x/../text/src/lib.rs",
        absolute,
    ] {
        let answer = Once::at(
            &demo,
            &["query", "affected-tests", "--format", "json", spelling],
        )
        .run()
        .json();
        assert_eq!(answer, canonical, "{spelling}");
    }
    // A package that `[workspace] exclude` leaves out owns no target.
    let excluded = Workspace::copy("demo");
    let root_manifest = std::fs::read_to_string(excluded.root().join("once.toml"))
        .expect("the demo has a root manifest")
        .replace("include = [", "exclude = [\"libs/shout\"]\ninclude = [");
    excluded.write("once.toml", &root_manifest);
    check(
        &[
            Once::at(
                &demo,
                &[
                    "query",
                    "affected-tests",
                    "/etc/passwd",
                    "../elsewhere/lib.rs",
                ],
            ),
            Once::at(
                &demo,
                &[
                    "query",
                    "affected-tests",
                    "--format",
                    "json",
                    "/etc/passwd",
                    "README.md",
                ],
            ),
            Once::at(
                &excluded,
                &["query", "affected-tests", "libs/shout/shout.c"],
            ),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query affected-tests /etc/passwd ../elsewhere/lib.rs
            exit: 0
            --- stdout
            affected tests: none
            warning: `/etc/passwd` is outside the workspace `$WORKSPACE`: it selects no test (changed paths are relative to the workspace root)
            warning: `../elsewhere/lib.rs` is outside the workspace `$WORKSPACE`: it selects no test (changed paths are relative to the workspace root)
            --- stderr

            $ once -C $WORKSPACE query affected-tests --format json /etc/passwd README.md
            exit: 0
            --- stdout
            {
              "tests": [],
              "warnings": [
                "`/etc/passwd` is outside the workspace `$WORKSPACE`: it selects no test (changed paths are relative to the workspace root)"
              ]
            }
            --- stderr

            $ once -C $WORKSPACE query affected-tests libs/shout/shout.c
            exit: 0
            --- stdout
            affected tests: none
            warning: `libs/shout/shout.c` is in no package of the workspace (no `once.toml` above it is included): it selects no test
            --- stderr
        "#]],
    );
}

#[test]
fn affected_tests_without_paths_selects_every_test() {
    let demo = demo();
    let outcomes = check(
        &[
            Once::at(&demo, &["query", "affected-tests"]),
            Once::at(&demo, &["query", "affected-tests", "--format", "json"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query affected-tests
            exit: 0
            --- stdout
            affected tests (8):
              apps/greeter/GreeterSmokeTest (sh_test)
                - no changed paths given: every test target is selected
              libs/greeting-js/GreetingJsTest (node_test)
                - no changed paths given: every test target is selected
              libs/greeting/GreetingIntegrationTest (rust_test)
                - no changed paths given: every test target is selected
              libs/greeting/GreetingTest (rust_test)
                - no changed paths given: every test target is selected
              libs/shout/ShoutTest (c_test)
                - no changed paths given: every test target is selected
              libs/text/TextTest (rust_test)
                - no changed paths given: every test target is selected
              tools/ReleaseTest (sh_test)
                - no changed paths given: every test target is selected
              tools/msgcheck/MsgCheckTest (pytest_test)
                - no changed paths given: every test target is selected
            --- stderr

            $ once -C $WORKSPACE query affected-tests --format json
            exit: 0
            --- stdout
            {
              "tests": [
                {
                  "id": "apps/greeter/GreeterSmokeTest",
                  "kind": "sh_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "libs/greeting-js/GreetingJsTest",
                  "kind": "node_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "libs/greeting/GreetingIntegrationTest",
                  "kind": "rust_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "libs/greeting/GreetingTest",
                  "kind": "rust_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "libs/shout/ShoutTest",
                  "kind": "c_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "libs/text/TextTest",
                  "kind": "rust_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "tools/ReleaseTest",
                  "kind": "sh_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                },
                {
                  "id": "tools/msgcheck/MsgCheckTest",
                  "kind": "pytest_test",
                  "reasons": [
                    "no changed paths given: every test target is selected"
                  ]
                }
              ],
              "warnings": []
            }
            --- stderr
        "#]],
    );
    let tests = Once::at(&demo, &["query", "tests", "--format", "json"])
        .run()
        .json();
    let ids = |v: &serde_json::Value| {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|t| t["id"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&outcomes[1].json()["tests"]), ids(&tests));
}

const VALID_TARGET: &str = r#"{"target": {"name": "Hello", "kind": "sh_binary", "srcs": ["hello.sh"], "deps": ["apps/greeter/Greeter"], "attrs": {"args": ["--loud"]}}}"#;
const INVALID_TARGET: &str = r#"{"name": "Hello", "kind": "sh_binary", "srcs": "hello.sh", "attrs": {"argz": [], "timeout_seconds": 5}}"#;

#[test]
fn validate_target_from_stdin() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "validate-target"]).stdin(VALID_TARGET),
            Once::at(&demo, &["query", "validate-target", "--format", "json"]).stdin(VALID_TARGET),
            Once::at(&demo, &["query", "validate-target"]).stdin(INVALID_TARGET),
            Once::at(&demo, &["query", "validate-target", "--format", "json"])
                .stdin(INVALID_TARGET),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query validate-target
            exit: 0
            --- stdout
            target valid
            --- stderr

            $ once -C $WORKSPACE query validate-target --format json
            exit: 0
            --- stdout
            {
              "valid": true,
              "diagnostics": []
            }
            --- stderr

            $ once -C $WORKSPACE query validate-target
            exit: 1
            --- stdout
            error[invalid_field_type]: `srcs` must be a list of strings, not a string
              in target `Hello`, attribute `srcs`
            error[unknown_attr]: target kind `sh_binary` has no attribute `argz`
              in target `Hello`, attribute `attrs.argz`
              = help: Rename `argz` to `args`
            error[unknown_attr]: target kind `sh_binary` has no attribute `timeout_seconds`
              in target `Hello`, attribute `attrs.timeout_seconds`
              = help: Remove `timeout_seconds`; known attributes: `main`, `args`, `env`
            target invalid: 3 errors
            --- stderr

            $ once -C $WORKSPACE query validate-target --format json
            exit: 1
            --- stdout
            {
              "valid": false,
              "diagnostics": [
                {
                  "code": "invalid_field_type",
                  "severity": "error",
                  "message": "`srcs` must be a list of strings, not a string",
                  "target": "Hello",
                  "attribute": "srcs",
                  "repairs": [],
                  "fixes": []
                },
                {
                  "code": "unknown_attr",
                  "severity": "error",
                  "message": "target kind `sh_binary` has no attribute `argz`",
                  "target": "Hello",
                  "attribute": "attrs.argz",
                  "repairs": [
                    "Rename `argz` to `args`"
                  ],
                  "fixes": []
                },
                {
                  "code": "unknown_attr",
                  "severity": "error",
                  "message": "target kind `sh_binary` has no attribute `timeout_seconds`",
                  "target": "Hello",
                  "attribute": "attrs.timeout_seconds",
                  "repairs": [
                    "Remove `timeout_seconds`; known attributes: `main`, `args`, `env`"
                  ],
                  "fixes": []
                }
              ]
            }
            --- stderr
        "#]],
    );
}

#[test]
fn validate_target_from_a_file() {
    let demo = demo();
    let valid = demo.write("proposed/valid.json", VALID_TARGET);
    let invalid = demo.write("proposed/invalid.json", INVALID_TARGET);
    let (valid, invalid) = (
        valid.to_str().expect("UTF-8 path"),
        invalid.to_str().expect("UTF-8 path"),
    );
    let outcomes = check(
        &[
            Once::at(
                &demo,
                &[
                    "query",
                    "validate-target",
                    "--file",
                    valid,
                    "--format",
                    "json",
                ],
            ),
            Once::at(&demo, &["query", "validate-target", "--file", invalid]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query validate-target --file $WORKSPACE/proposed/valid.json --format json
            exit: 0
            --- stdout
            {
              "valid": true,
              "diagnostics": []
            }
            --- stderr

            $ once -C $WORKSPACE query validate-target --file $WORKSPACE/proposed/invalid.json
            exit: 1
            --- stdout
            error[invalid_field_type]: `srcs` must be a list of strings, not a string
              in target `Hello`, attribute `srcs`
            error[unknown_attr]: target kind `sh_binary` has no attribute `argz`
              in target `Hello`, attribute `attrs.argz`
              = help: Rename `argz` to `args`
            error[unknown_attr]: target kind `sh_binary` has no attribute `timeout_seconds`
              in target `Hello`, attribute `attrs.timeout_seconds`
              = help: Remove `timeout_seconds`; known attributes: `main`, `args`, `env`
            target invalid: 3 errors
            --- stderr
        "#]],
    );
    assert_eq!((outcomes[0].code, outcomes[1].code), (0, 1));
}

/// `-C` and `--format` are global: accepted before or after the subcommand, same answer.
#[test]
fn global_flags_before_or_after_the_subcommand() {
    let demo = demo();
    let root = demo.root().to_str().expect("UTF-8 path");
    let orders: [&[&str]; 4] = [
        &["-C", root, "--format", "json", "query", "tests"],
        &["--format", "json", "query", "-C", root, "tests"],
        &["query", "tests", "-C", root, "--format", "json"],
        &["query", "--format=json", "tests", "--directory", root],
    ];
    let outcomes: Vec<_> = orders
        .iter()
        .map(|args| Once::new(args).workspace(&demo).run())
        .collect();
    for outcome in &outcomes {
        assert_eq!(outcome.code, 0, "{}", outcome.render());
        assert_eq!(
            outcome.stdout, outcomes[0].stdout,
            "`once {}` answered differently",
            outcome.command
        );
    }
    assert!(
        outcomes[0]
            .json()
            .as_array()
            .is_some_and(|tests| tests.len() == 8)
    );
}

#[test]
fn workspace_from_the_environment() {
    let demo = demo();
    check(
        &[Once::new(&["query", "workspace"])
            .env("ONCE_WORKSPACE", demo.root())
            .workspace(&demo)],
        &expect![[r#"
            $ once query workspace
            exit: 0
            --- stdout
            workspace: $WORKSPACE
            configuration: linux-x86_64 [linux-x86_64, linux, x86_64, release, default]
            root manifest: once.toml (present)
            packages: 9 (., apps/greeter, data, libs/greeting, libs/greeting-js, libs/shout, libs/text, tools, tools/msgcheck)
            targets: 17
            diagnostics: 0 errors, 0 warnings
            --- stderr
        "#]],
    );
    // `-C` wins over the environment.
    let other = Workspace::copy("workspaces/valid");
    let outcome = Once::new(&[
        "-C",
        other.root().to_str().expect("UTF-8 path"),
        "query",
        "targets",
    ])
    .env("ONCE_WORKSPACE", demo.root())
    .run();
    assert!(
        outcome.stdout.contains("lib/LibTest") && !outcome.stdout.contains("Greeter"),
        "{}",
        outcome.render()
    );
}

/// Without `-C`, the root is the nearest ancestor whose `once.toml` has `[workspace]`,
/// even from inside a package (which has a `once.toml` of its own).
#[test]
fn workspace_root_is_discovered_from_a_subdirectory() {
    let demo = demo();
    check(
        &[
            Once::new(&["query", "workspace"])
                .cwd(demo.root().join("libs/greeting/src"))
                .workspace(&demo),
            Once::new(&[
                "query",
                "target",
                "libs/greeting/Greeting",
                "--format",
                "json",
            ])
            .cwd(demo.root().join("libs/greeting"))
            .workspace(&demo),
        ],
        &expect![[r#"
            $ once query workspace
            exit: 0
            --- stdout
            workspace: $WORKSPACE
            configuration: linux-x86_64 [linux-x86_64, linux, x86_64, release, default]
            root manifest: once.toml (present)
            packages: 9 (., apps/greeter, data, libs/greeting, libs/greeting-js, libs/shout, libs/text, tools, tools/msgcheck)
            targets: 17
            diagnostics: 0 errors, 0 warnings
            --- stderr

            $ once query target libs/greeting/Greeting --format json
            exit: 0
            --- stdout
            {
              "label": {
                "package": "libs/greeting",
                "name": "Greeting",
                "id": "libs/greeting/Greeting"
              },
              "kind": "rust_library",
              "srcs": [
                "src/**/*.rs"
              ],
              "deps": [
                "libs/text/Text"
              ],
              "visibility": [
                "subtree:apps",
                "package:libs/greeting"
              ],
              "labels": [],
              "attrs": {
                "crate_name": "greeting",
                "features": [
                  "punctuation"
                ]
              },
              "capabilities": [
                {
                  "name": "build",
                  "output_groups": [
                    "default"
                  ],
                  "requires_outputs": []
                }
              ],
              "providers": [
                "rust_crate"
              ],
              "tools": [
                {
                  "name": "cargo",
                  "docs": "Builds, runs and tests the package (`cargo build`, `run`, `test`)."
                },
                {
                  "name": "rustc",
                  "docs": "The compiler Cargo invokes; its version decides the editions available."
                }
              ],
              "diagnostics": [],
              "input_digest": "e9a1faace7ff29aa9235c411df9ec3f8aa23e28b42f111559707d122586b8b0d"
            }
            --- stderr
        "#]],
    );
}

#[test]
fn errors_exit_2_with_a_message() {
    let demo = demo();
    check(
        &[
            Once::new(&["-C", "/nonexistent/once-workspace", "query", "workspace"]),
            Once::new(&[
                "-C",
                "/nonexistent/once-workspace",
                "query",
                "workspace",
                "--format",
                "json",
            ]),
            Once::new(&["query", "workspace"]).env("ONCE_WORKSPACE", "/nonexistent/once-workspace"),
            Once::new(&[
                "--workspace",
                "/nonexistent/once-workspace",
                "query",
                "workspace",
            ]),
            Once::new(&[
                "query",
                "workspace",
                "--directory=/nonexistent/once-workspace",
            ]),
            Once::at(&demo, &["query", "target", "apps/greeter/Greter"]),
            Once::at(&demo, &["query", "capabilities", "nothing/like/this"]),
            Once::at(
                &demo,
                &["query", "target", "libs/text/Txt", "--format", "json"],
            ),
            Once::at(&demo, &["query", "schema", "rust_bin"]),
            Once::at(&demo, &["query", "example", "rust_binary", "hello-world"]),
            Once::at(&demo, &["query", "validate-target"]).stdin("{\"name\": \"Hello\","),
            Once::at(
                &demo,
                &["query", "validate-target", "--file", "missing.json"],
            ),
        ],
        &expect_file!["../snapshots/commands/errors.txt"],
    );
}

#[test]
fn a_panic_is_reported_as_a_bug_and_exits_2() {
    let report = |lines: &[&str]| {
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(
            lines[0].starts_with(concat!(
                "error: internal error, this is a bug in once ",
                env!("CARGO_PKG_VERSION"),
                ": `once debug-panic` panics on purpose (at crates/once_cli/src/main.rs:"
            )),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("while running: ") && lines[1].contains(" debug-panic"),
            "{lines:?}"
        );
        assert!(
            lines[2].starts_with("please report it at https://"),
            "{lines:?}"
        );
    };

    let human = Once::new(&["debug-panic"]).run();
    assert_eq!(human.code, 2, "{}", human.render());
    assert!(human.stdout.is_empty(), "{}", human.render());
    let lines: Vec<&str> = human
        .stderr
        .lines()
        .map(|line| line.strip_prefix("once: ").unwrap_or("missing `once: `"))
        .collect();
    report(&lines);

    // `--format json`: one JSON error line, like every other error of that format.
    let json = Once::new(&["debug-panic", "--format", "json"]).run();
    assert_eq!(json.code, 2, "{}", json.render());
    let value: serde_json::Value = serde_json::from_str(json.stderr.trim()).unwrap();
    assert_eq!(value["error"]["internal"], true, "{value}");
    let causes: Vec<&str> = value["error"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cause| cause.as_str().unwrap())
        .collect();
    report(&causes);
}

/// A reader that leaves early (`once … | head`) ends every command quietly: no message
/// (no "internal error"), exit status 141 (128 + SIGPIPE, docs/cli.md), whether it
/// read part of a long answer or nothing at all.
#[test]
fn a_closed_output_pipe_ends_every_command_quietly() {
    let demo = demo();
    // 3,000 targets: a listing far longer than a pipe holds (64 KiB).
    let mut manifest = String::new();
    for i in 0..3000 {
        manifest.push_str(&format!(
            "[[target]]\nname = \"Files{i:04}\"\nkind = \"filegroup\"\nsrcs = []\n\n"
        ));
    }
    demo.write("libs/many/once.toml", &manifest);
    let cases: &[(&[&str], usize)] = &[
        (&["query", "targets"], 100),
        (&["query", "targets", "--format", "json"], 100),
        (&["query", "targets"], 0),
        (&["query", "workspace"], 0),
        (&["query", "target", "apps/greeter/Greeter"], 0),
        (&["query", "example", "command", "command-generate-file"], 0),
        (&["query", "module-contract"], 0),
        (&["query", "validate-workspace"], 0),
        (&["build", "data/Messages"], 0),
        (&["cache", "stats"], 0),
        (&["runtime", "list"], 0),
        (&["completions", "bash"], 0),
    ];
    let mut unquiet = Vec::new();
    for (args, bytes) in cases {
        let (code, stderr) = Once::at(&demo, args).run_closing_stdout_after(*bytes);
        if (code, stderr.as_str()) != (141, "") {
            unquiet.push(format!(
                "`once {}`, its reader gone after {bytes} bytes: exit {code}, stderr {stderr:?}",
                args.join(" ")
            ));
        }
    }
    assert!(unquiet.is_empty(), "{}", unquiet.join("\n"));
}

#[test]
fn usage_errors_exit_2() {
    let outcomes = [
        Once::new(&["query", "nonsense"]).run(),
        Once::new(&["query", "workspace", "--format", "yaml"]).run(),
        Once::new(&[]).run(),
    ];
    for outcome in &outcomes {
        assert_eq!(outcome.code, 2, "{}", outcome.render());
        assert!(outcome.stdout.is_empty(), "{}", outcome.render());
    }
    assert!(
        outcomes[0]
            .stderr
            .contains("unrecognized subcommand 'nonsense'"),
        "{}",
        outcomes[0].render()
    );
    assert!(
        outcomes[1].stderr.contains("invalid value 'yaml'"),
        "{}",
        outcomes[1].render()
    );
}

#[test]
fn version_and_help() {
    // The version and the commit it was built from.
    let version = Once::new(&["--version"]).run();
    assert_eq!(version.code, 0);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_owned();
    assert_eq!(
        version.stdout,
        format!("once {} ({head})\n", env!("CARGO_PKG_VERSION"))
    );
    let pages = tempfile::tempdir().unwrap();
    let written = Once::new(&["man-pages", pages.path().to_str().unwrap()]).run();
    assert_eq!(written.code, 0, "{}", written.render());
    let init = std::fs::read_to_string(pages.path().join("once-init.1")).unwrap();
    assert!(init.contains(".TH once-init 1 "), "{init}");
    assert!(init.contains("\\-\\-check"), "{init}");
    assert!(pages.path().join("once.1").is_file());
    let help = Once::new(&["query", "--help"]).run();
    assert_eq!(help.code, 0);
    for command in [
        "workspace",
        "targets",
        "validate-workspace",
        "validate-target",
        "affected-tests",
    ] {
        assert!(
            help.stdout.contains(command),
            "`once query --help` does not mention `{command}`:\n{}",
            help.stdout
        );
    }
}

#[test]
fn completions() {
    let bash = Once::new(&["completions", "bash"]).run();
    assert_eq!(bash.code, 0, "{}", bash.render());
    assert!(
        bash.stdout.contains("_once()") && bash.stdout.contains("complete -F _once"),
        "{}",
        bash.stdout
    );
    assert!(bash.stdout.contains("validate-workspace") && bash.stdout.contains("--format"));
    let unknown = Once::new(&["completions", "tcsh"]).run();
    assert_eq!(unknown.code, 2, "{}", unknown.render());
}

/// Computing packages on several threads (`ONCE_THREADS`) never changes an answer, and a
/// count that is not a positive number is a usage error.
#[test]
fn analysis_threads_do_not_change_answers() {
    let demo = demo();
    let broken = Workspace::copy("workspaces/dependency_cycle");
    for workspace in [&demo, &broken] {
        for query in [
            &["query", "validate-workspace", "--format", "json"][..],
            &["query", "targets", "--format", "json"],
            &["query", "affected-tests", "--format", "json"],
        ] {
            let root = workspace.root().to_str().expect("UTF-8 path");
            let outputs: Vec<String> = ["1", "2", "7"]
                .iter()
                .map(|threads| {
                    let mut args = vec!["-C", root];
                    args.extend_from_slice(query);
                    let outcome = Once::new(&args).env("ONCE_THREADS", threads).run();
                    outcome.render()
                })
                .collect();
            assert!(outputs.iter().all(|o| o == &outputs[0]), "{outputs:#?}");
        }
    }
    check(
        &[
            Once::new(&["query", "validate-workspace"])
                .env("ONCE_THREADS", "none")
                .workspace(&demo),
            Once::new(&["mcp"])
                .env("ONCE_THREADS", "0")
                .workspace(&demo),
            Once::new(&["lsp"])
                .env("ONCE_THREADS", "-1")
                .workspace(&demo),
        ],
        &expect![[r#"
            $ once query validate-workspace
            exit: 2
            --- stdout
            --- stderr
            once: error: ONCE_THREADS must be a positive number of threads, not `none`

            $ once mcp
            exit: 2
            --- stdout
            --- stderr
            once: error: ONCE_THREADS must be a positive number of threads, not `0`

            $ once lsp
            exit: 2
            --- stdout
            --- stderr
            once: error: ONCE_THREADS must be a positive number of threads, not `-1`
        "#]],
    );
}

#[test]
fn control_characters_in_arguments_are_escaped_in_errors() {
    let demo = demo();
    let coloured = "a\u{1b}[31mb\u{7}";
    let outcomes = [
        Once::at(&demo, &["query", "target", coloured]).run(),
        Once::at(&demo, &["query", "schema", coloured]).run(),
        Once::new(&["query", coloured]).run(),
        Once::new(&["-C", coloured, "query", "workspace"]).run(),
    ];
    for outcome in &outcomes {
        assert_eq!(outcome.code, 2, "{}", outcome.render());
        assert!(
            !outcome.stderr.contains(['\u{1b}', '\u{7}']),
            "a control character reached the terminal: {:?}",
            outcome.stderr
        );
    }
    // Our own messages show where the control characters were.
    for outcome in [&outcomes[0], &outcomes[1], &outcomes[3]] {
        assert!(
            outcome.stderr.contains("a\u{FFFD}[31mb\u{FFFD}"),
            "{:?}",
            outcome.stderr
        );
    }
    // JSON output carries the exact argument, escaped by JSON itself.
    let json = Once::at(&demo, &["query", "target", coloured, "--format", "json"]).run();
    assert_eq!(json.code, 2);
    assert!(
        json.stderr.contains("a\\u001b[31mb\\u0007"),
        "{}",
        json.stderr
    );
}

/// `once cache stats|gc|clean` on the workspace's store: counts, a gc that keeps what
/// fits, a clean that empties it, and a size that is not one is a usage error.
#[test]
fn cache_stats_gc_and_clean() {
    let demo = demo();
    let store = once_exec::Store::open(&once_exec::Store::default_path(demo.root())).unwrap();
    store.put_blob(&[1u8; 3000]).unwrap();
    store.put_blob(&[2u8; 1000]).unwrap();
    let stats = Once::at(&demo, &["cache", "stats", "--format", "json"]).run();
    assert_eq!(stats.code, 0, "{}", stats.render());
    assert_eq!(
        stats.json()["blobs"],
        serde_json::json!({"count": 2, "bytes": 4000})
    );
    // Either blob may be the older one (oldest first): removing one is enough.
    let gc = Once::at(
        &demo,
        &["cache", "gc", "--max-size", "3500", "--format", "json"],
    )
    .run();
    assert_eq!(gc.code, 0, "{}", gc.render());
    assert_eq!(gc.json()["removed_blobs"], 1, "{}", gc.render());
    let after = gc.json()["bytes_after"].as_u64().unwrap();
    assert!(after == 1000 || after == 3000, "{}", gc.render());
    let clean = Once::at(&demo, &["cache", "clean"]).run();
    assert_eq!(clean.code, 0, "{}", clean.render());
    assert_eq!(store.stats().unwrap(), once_exec::StoreStats::default());
    let bad = Once::at(&demo, &["cache", "gc", "--max-size", "lots"]).run();
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("`lots` is not a size"),
        "{}",
        bad.render()
    );
}
