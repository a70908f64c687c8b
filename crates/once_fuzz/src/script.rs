//! The `script_header` target: the input as an annotated script (`tools/gen.sh`): its
//! shebang and `# once` directives, read by `once_graph::script::parse_script`, then
//! validated and planned for `once exec` through an in-memory workspace.
//!
//! Properties:
//! - parsing is deterministic and every range it reports (diagnostics, their fixes'
//!   edits, directive keywords and values) lies inside the text on character boundaries;
//! - a valid contract names a runtime and only normalised workspace paths (relative, no
//!   empty, `.` or `..` segment, nothing under `.once`);
//! - `Analysis::script` (what `once query script` and the MCP tool answer) agrees with the
//!   parse on validity;
//! - **a script whose header has an error is never planned**: `Analysis::script_plan`
//!   (what `once exec --script` and MCP `once_exec_script` run) refuses it; a plan that
//!   is made ends with the script's own action, which reads the script and writes only
//!   the outputs its header declares.

use std::path::PathBuf;
use std::sync::Arc;

use once_analysis::{AnalysisHost, MemorySystem, ScriptRequest};
use once_graph::script::parse_script;
use once_model::action::ActionStep;

use crate::{check_diagnostic, check_model_range};

const SCRIPT: &str = "tools/gen.sh";

/// The rest of the workspace: a script the input may need, and files it may read.
const FIXED_FILES: &[(&str, &str)] = &[
    ("once.toml", "[workspace]\n"),
    (
        "tools/dep.sh",
        "#!/bin/sh\n# once output \"out/dep.txt\"\necho dep > out/dep.txt\n",
    ),
    ("tools/order.sh", "#!/bin/sh\n# once input \"data\"\ntrue\n"),
    ("tools/data/a.csv", "a\n"),
    ("tools/data/b.csv", "b\n"),
    ("shared/config.toml", "x = 1\n"),
];

pub fn script_header(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parse = parse_script(SCRIPT, &text);
    assert_eq!(
        parse,
        parse_script(SCRIPT, &text),
        "parsing is not deterministic"
    );
    for diagnostic in &parse.diagnostics {
        check_diagnostic(&text, diagnostic);
    }
    for directive in &parse.directives {
        check_model_range(
            &text,
            directive.keyword_range,
            &format_args!("the directive `{}`", directive.keyword),
        );
        if let Some(value) = directive.value_range {
            check_model_range(
                &text,
                value,
                &format_args!("the value of `{}`", directive.keyword),
            );
        }
    }
    let contract = &parse.contract;
    if parse.is_valid() {
        assert!(
            !contract.runtime.is_empty(),
            "a valid contract without a runtime"
        );
        let paths = contract
            .inputs
            .iter()
            .chain(&contract.outputs)
            .chain(&contract.needs)
            .chain(contract.cwd.iter().filter(|cwd| *cwd != "."));
        for path in paths {
            check_workspace_path(path);
        }
    }
    check_plan(&text, parse.is_valid());
}

/// A normalised workspace-relative path (an input may be a glob).
fn check_workspace_path(path: &str) {
    assert!(
        !path.is_empty() && !path.starts_with('/'),
        "`{path}` is not workspace-relative"
    );
    for segment in path.split('/') {
        assert!(
            !matches!(segment, "" | "." | ".."),
            "`{path}` is not normalised"
        );
    }
    assert!(
        path != ".once" && !path.starts_with(".once/"),
        "`{path}` is in once's own directory"
    );
}

fn check_plan(text: &str, valid: bool) {
    let system = MemorySystem::default();
    for (path, contents) in FIXED_FILES {
        system.write(PathBuf::from("/ws").join(path), *contents);
    }
    system.write(PathBuf::from("/ws").join(SCRIPT), text);
    let host = AnalysisHost::load(Arc::new(system), PathBuf::from("/ws"));
    let analysis = host.analysis();
    let validation = analysis
        .script(SCRIPT)
        .expect("no edit can cancel this snapshot")
        .expect("the script's path names a workspace file");
    assert_eq!(
        validation.valid, valid,
        "the script's validation and its parse disagree"
    );
    let request = ScriptRequest {
        path: SCRIPT.to_owned(),
        args: vec!["arg".to_owned()],
        environment: [("NAME".to_owned(), "value".to_owned())].into(),
    };
    let plan = analysis
        .script_plan(&request)
        .expect("no edit can cancel this snapshot");
    let Ok(plan) = plan else { return };
    assert!(
        valid,
        "a script with an invalid header was planned: {:?}",
        validation
            .diagnostics
            .iter()
            .map(|d| &d.diagnostic.message)
            .collect::<Vec<_>>()
    );
    let own = plan
        .script_action()
        .expect("a script's plan has the script's own action");
    assert!(
        own.action.inputs.iter().any(|input| input == SCRIPT),
        "the script's action does not read the script: {:?}",
        own.action.inputs
    );
    assert_eq!(
        own.action.outputs, validation.contract.outputs,
        "the script's action writes other outputs than its header declares"
    );
    let ActionStep::Run(command) = &own.action.step else {
        panic!("a script's action is not a command");
    };
    assert_eq!(
        command.argv.first(),
        Some(&validation.contract.runtime),
        "the script's action does not run its runtime"
    );
}
