//! `once query script`: an annotated script's contract, or its diagnostics (exit 1), in
//! both formats; paths that cannot name a script of the workspace.

use expect_test::expect;

use crate::support::{Once, Workspace, check};

fn workspace() -> Workspace {
    let workspace = Workspace::copy("workspaces/valid");
    workspace.write(
        "scripts/report.sh",
        "#!/usr/bin/env bash\n# once input \"data/*.csv\"\n# once output \"out/report.txt\"\n# once env \"TITLE\"\ncat data/*.csv > out/report.txt\n",
    );
    workspace.write(
        "scripts/broken.py",
        "#!/usr/bin/env python3\n# once inputs \"a.txt\"\n# once output: \"b.txt\"\nprint('hi')\n",
    );
    workspace.write("scripts/plain.sh", "#!/bin/sh\necho hi\n");
    workspace
}

#[test]
fn valid_and_invalid_scripts_in_both_formats() {
    let workspace = workspace();
    check(
        &[
            Once::at(&workspace, &["query", "script", "scripts/report.sh"]),
            Once::at(
                &workspace,
                &["query", "script", "./scripts/report.sh", "--format", "json"],
            ),
            Once::at(&workspace, &["query", "script", "scripts/plain.sh"]),
            Once::at(&workspace, &["query", "script", "scripts/broken.py"]),
            Once::at(
                &workspace,
                &["query", "script", "scripts/broken.py", "--format", "json"],
            ),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query script scripts/report.sh
            exit: 0
            --- stdout
            script valid: scripts/report.sh runs with `bash`
              inputs: scripts/data/*.csv
              outputs: scripts/out/report.txt
              env: TITLE
            --- stderr

            $ once -C $WORKSPACE query script ./scripts/report.sh --format json
            exit: 0
            --- stdout
            {
              "valid": true,
              "path": "scripts/report.sh",
              "contract": {
                "path": "scripts/report.sh",
                "runtime": "bash",
                "runtime_args": [],
                "inputs": [
                  "scripts/data/*.csv"
                ],
                "outputs": [
                  "scripts/out/report.txt"
                ],
                "needs": [],
                "fingerprints": [],
                "env_vars": [
                  "TITLE"
                ],
                "output_symlinks": "materialize-external"
              },
              "diagnostics": []
            }
            --- stderr

            $ once -C $WORKSPACE query script scripts/plain.sh
            exit: 0
            --- stdout
            script valid: scripts/plain.sh runs with `/bin/sh`
              no `once` directives: nothing is declared, so nothing is cached
            --- stderr

            $ once -C $WORKSPACE query script scripts/broken.py
            exit: 1
            --- stdout
            error[invalid_script_contract]: invalid `once inputs` directive: directives are singular: `input`, not `inputs` (one directive per value)
              --> scripts/broken.py:2:3
              in target `scripts/broken.py`, attribute `path`
              = help: Write `# once input "a.txt"`
            error[invalid_script_contract]: invalid `once output` directive: no colon after the directive
              --> scripts/broken.py:3:3
              in target `scripts/broken.py`, attribute `path`
              = help: Write `# once output "b.txt"`

            script invalid: scripts/broken.py
            --- stderr

            $ once -C $WORKSPACE query script scripts/broken.py --format json
            exit: 1
            --- stdout
            {
              "valid": false,
              "path": "scripts/broken.py",
              "diagnostics": [
                {
                  "code": "invalid_script_contract",
                  "severity": "error",
                  "message": "invalid `once inputs` directive: directives are singular: `input`, not `inputs` (one directive per value)",
                  "file": "scripts/broken.py",
                  "range": {
                    "start": {
                      "line": 2,
                      "column": 3
                    },
                    "end": {
                      "line": 2,
                      "column": 22
                    }
                  },
                  "target": "scripts/broken.py",
                  "attribute": "path",
                  "repairs": [
                    "Write `# once input \"a.txt\"`"
                  ],
                  "fixes": [
                    {
                      "title": "Rewrite the directive",
                      "preferred": true,
                      "edits": [
                        {
                          "range": {
                            "start": {
                              "line": 2,
                              "column": 3
                            },
                            "end": {
                              "line": 2,
                              "column": 22
                            }
                          },
                          "new_text": "once input \"a.txt\""
                        }
                      ]
                    }
                  ]
                },
                {
                  "code": "invalid_script_contract",
                  "severity": "error",
                  "message": "invalid `once output` directive: no colon after the directive",
                  "file": "scripts/broken.py",
                  "range": {
                    "start": {
                      "line": 3,
                      "column": 3
                    },
                    "end": {
                      "line": 3,
                      "column": 23
                    }
                  },
                  "target": "scripts/broken.py",
                  "attribute": "path",
                  "repairs": [
                    "Write `# once output \"b.txt\"`"
                  ],
                  "fixes": [
                    {
                      "title": "Rewrite the directive",
                      "preferred": true,
                      "edits": [
                        {
                          "range": {
                            "start": {
                              "line": 3,
                              "column": 3
                            },
                            "end": {
                              "line": 3,
                              "column": 23
                            }
                          },
                          "new_text": "once output \"b.txt\""
                        }
                      ]
                    }
                  ]
                }
              ]
            }
            --- stderr
        "#]],
    );
}

#[test]
fn paths_that_name_no_script_of_the_workspace() {
    let workspace = workspace();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("elsewhere.sh");
    std::fs::write(&target, "#!/bin/sh\n# once output \"x\"\n").unwrap();
    std::os::unix::fs::symlink(&target, workspace.root().join("scripts/linked.sh")).unwrap();
    check(
        &[
            Once::at(&workspace, &["query", "script", "scripts/missing.sh"]),
            Once::at(&workspace, &["query", "script", "../escape.sh"]),
            Once::at(&workspace, &["query", "script", "/etc/passwd"]),
            Once::at(&workspace, &["query", "script", "scripts/linked.sh"]),
            Once::at(&workspace, &["query", "script", ".once/x.sh"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query script scripts/missing.sh
            exit: 1
            --- stdout
            error[invalid_script_path]: cannot read the script `scripts/missing.sh`: No such file or directory (os error 2)
              --> scripts/missing.sh
              in target `scripts/missing.sh`, attribute `path`
              = help: Fix the script path, shebang, or `once` directives and validate again

            script invalid: scripts/missing.sh
            --- stderr

            $ once -C $WORKSPACE query script ../escape.sh
            exit: 2
            --- stdout
            --- stderr
            once: error: script path `../escape.sh` leaves the workspace with `..`

            $ once -C $WORKSPACE query script /etc/passwd
            exit: 2
            --- stdout
            --- stderr
            once: error: script path `/etc/passwd` is absolute; script paths are relative to the workspace root

            $ once -C $WORKSPACE query script scripts/linked.sh
            exit: 1
            --- stdout
            error[invalid_script_path]: the script `scripts/linked.sh` resolves outside the workspace (through a symlink)
              --> scripts/linked.sh
              in target `scripts/linked.sh`, attribute `path`
              = help: Fix the script path, shebang, or `once` directives and validate again

            script invalid: scripts/linked.sh
            --- stderr

            $ once -C $WORKSPACE query script .once/x.sh
            exit: 1
            --- stdout
            error[invalid_script_path]: `.once/x.sh` is inside `.once`, which holds once's own state
              --> .once/x.sh
              in target `.once/x.sh`, attribute `path`
              = help: Fix the script path, shebang, or `once` directives and validate again

            script invalid: .once/x.sh
            --- stderr
        "#]],
    );
}
