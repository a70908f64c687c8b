//! Human-readable rendering. Colour goes through `anstream`, which strips it when stdout
//! is not a terminal (or `NO_COLOR` is set).

/// Prints a line through `anstream` (which strips colour off a terminal); a closed pipe
/// (`once … | head`) is recorded ([`crate::output`]), never a panic.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(crate::output::human_stdout(), $($arg)*);
    }};
}

/// [`println!`] without the newline.
macro_rules! print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(crate::output::human_stdout(), $($arg)*);
    }};
}
use anstyle::{AnsiColor, Style};
use once_analysis::{
    AffectedTest, AffectedTests, LocatedDiagnostic, TargetDetails, TargetSummaryInfo, TestTarget,
    Validation, WorkspaceInfo,
};
use once_model::{Example, KindSchema, Severity};

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();
const ID: Style = AnsiColor::Cyan.on_default().bold();
const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const INFO: Style = AnsiColor::Blue.on_default().bold();
const OK: Style = AnsiColor::Green.on_default().bold();

fn paint(style: Style, text: impl std::fmt::Display) -> String {
    format!("{style}{text}{style:#}")
}

/// `1 error`, `2 errors`.
fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The first sentence of a docs text, on one line.
fn first_sentence(docs: &str) -> String {
    let flat = docs.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.find(". ") {
        Some(end) => flat[..=end].to_owned(),
        None => flat,
    }
}

/// Whether `text` has no control character other than newline and tab.
pub fn is_printable(text: &str) -> bool {
    !text.chars().any(is_hidden)
}

fn is_hidden(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` with control characters other than newline and tab shown as `�`, so text that
/// came from outside (fetched bytes, command-line arguments echoed in errors) cannot drive
/// the terminal.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if is_printable(text) {
        return text.into();
    }
    text.chars()
        .map(|c| if is_hidden(c) { '\u{FFFD}' } else { c })
        .collect::<String>()
        .into()
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

pub fn workspace(info: &WorkspaceInfo) {
    println!("{} {}", paint(BOLD, "workspace:"), info.root.display());
    println!(
        "{} {}-{} [{}]",
        paint(BOLD, "configuration:"),
        info.os,
        info.arch,
        info.tokens.join(", ")
    );
    println!(
        "{} once.toml ({})",
        paint(BOLD, "root manifest:"),
        if info.root_manifest {
            "present"
        } else {
            "absent"
        }
    );
    let packages: Vec<String> = info
        .packages
        .iter()
        .map(|p| if p.is_empty() { ".".into() } else { p.clone() })
        .collect();
    println!(
        "{} {} ({})",
        paint(BOLD, "packages:"),
        packages.len(),
        list(&packages)
    );
    println!("{} {}", paint(BOLD, "targets:"), info.target_count);
    if !info.module_paths.is_empty() {
        println!(
            "{} {}",
            paint(BOLD, "modules:"),
            info.module_paths.join(", ")
        );
    }
    println!(
        "{} {}, {}",
        paint(BOLD, "diagnostics:"),
        count(info.error_count, "error"),
        count(info.warning_count, "warning")
    );
}

pub fn targets(targets: &[TargetSummaryInfo]) {
    if targets.is_empty() {
        println!("targets: none");
        return;
    }
    println!("{}", paint(BOLD, format!("targets ({}):", targets.len())));
    for target in targets {
        println!(
            "  {} {} [{}]",
            paint(ID, &target.id),
            paint(DIM, format!("({})", target.kind)),
            target.capabilities.join(", ")
        );
    }
}

/// Per target: its id and input digest, then one `DIGEST  PATH` line per input (the
/// layout of `sha256sum`), or `!  PATH: ERROR` for an input without a digest.
pub fn target_inputs(answers: &[(String, once_analysis::TargetInputs)]) {
    for (id, inputs) in answers {
        println!("{} {}", paint(ID, id), paint(DIM, &inputs.input_digest));
        for input in &inputs.inputs {
            match &input.digest {
                Ok(digest) => println!("  {digest}  {}", input.path),
                Err(err) => println!("  !  {}: {err}", input.path),
            }
        }
    }
}

pub fn target(target: &TargetDetails) {
    println!(
        "{} {}",
        paint(ID, target.label.id()),
        paint(DIM, format!("({})", target.kind))
    );
    println!("  srcs: {}", list(&target.srcs));
    println!("  deps: {}", list(&target.deps));
    for (role, ids) in &target.dependency_edges {
        println!("  dependencies.{role}: {}", list(ids));
    }
    if !target.visibility.is_empty() {
        println!("  visibility: {}", target.visibility.join(", "));
    }
    if !target.labels.is_empty() {
        println!("  labels: {}", target.labels.join(", "));
    }
    if target.attrs.is_empty() {
        println!("  attrs: none");
    } else {
        println!("  attrs:");
        for (name, value) in &target.attrs {
            println!("    {name} = {value}");
        }
    }
    let capabilities: Vec<String> = target.capabilities.iter().map(|c| c.name.clone()).collect();
    println!("  capabilities: {}", list(&capabilities));
    println!("  providers: {}", list(&target.providers));
    let tools: Vec<String> = target.tools.iter().map(|t| t.name.clone()).collect();
    if !tools.is_empty() {
        println!("  tools: {}", tools.join(", "));
    }
    if !target.diagnostics.is_empty() {
        println!();
        diagnostics(&target.diagnostics);
    }
}

pub fn capabilities(target: &TargetDetails) {
    println!(
        "{} {}",
        paint(ID, target.label.id()),
        paint(DIM, format!("({})", target.kind))
    );
    if target.capabilities.is_empty() {
        println!("capabilities: none");
        return;
    }
    println!("capabilities:");
    for capability in &target.capabilities {
        println!("  {}", paint(BOLD, &capability.name));
        println!("    outputs: {}", list(&capability.output_groups));
        if !capability.requires_outputs.is_empty() {
            println!("    requires: {}", capability.requires_outputs.join(", "));
        }
    }
}

pub fn schema(kind: &KindSchema) {
    println!("{}: {}", paint(ID, &kind.name), kind.docs);
    println!("{}", paint(BOLD, "attrs:"));
    if kind.attrs.is_empty() {
        println!("  none");
    }
    for attr in &kind.attrs {
        let mut flags = vec![if attr.required {
            "required"
        } else {
            "optional"
        }];
        if attr.configurable {
            flags.push("configurable");
        }
        let default = attr
            .default
            .as_ref()
            .map_or(String::new(), |d| format!(" = {d}"));
        let allowed = match (&attr.allowed_values[..], attr.range) {
            ([], Some((minimum, maximum))) => format!(" from {minimum} to {maximum}"),
            ([], None) => String::new(),
            (values, _) => format!(" one of: {}", values.join(", ")),
        };
        println!(
            "  {}: {}{default} ({}){allowed}",
            paint(BOLD, &attr.name),
            attr.ty,
            flags.join(", ")
        );
        println!("    {}", paint(DIM, &attr.docs));
    }
    println!("{}", paint(BOLD, "deps:"));
    if kind.dependencies.is_empty() {
        println!("  none");
    }
    for role in &kind.dependencies {
        let count = match role.max {
            Some(max) => format!("{}..={max}", role.min),
            None => format!("{}..", role.min),
        };
        println!(
            "  {}: accepts [{}] ({count})",
            paint(BOLD, &role.name),
            role.providers.join(", ")
        );
        println!("    {}", paint(DIM, &role.docs));
    }
    println!("{} {}", paint(BOLD, "providers:"), list(&kind.providers));
    println!("{}", paint(BOLD, "capabilities:"));
    for capability in &kind.capabilities {
        let requires = if capability.requires_outputs.is_empty() {
            String::new()
        } else {
            format!(" (requires: {})", capability.requires_outputs.join(", "))
        };
        println!(
            "  {}: {}{requires}",
            paint(BOLD, &capability.name),
            capability.output_groups.join(", ")
        );
    }
    if !kind.tools.is_empty() {
        let tools: Vec<String> = kind.tools.iter().map(|t| t.name.clone()).collect();
        println!("{} {}", paint(BOLD, "tools:"), tools.join(", "));
    }
    if !kind.source_references.is_empty() {
        println!("{}", paint(BOLD, "source references:"));
        for reference in &kind.source_references {
            println!(
                "  {} {}: {}",
                reference.system, reference.symbol, reference.url
            );
        }
    }
    println!("{}", paint(BOLD, "examples:"));
    for example in &kind.examples {
        println!("  {} - {}", paint(BOLD, &example.slug), example.use_when);
    }
}

/// A starter example: its name, when to use it, the list of its files, then each file
/// under a `==> PATH <==` header (as `head` shows several files), ready to copy.
pub fn example(example: &Example) {
    println!("example {}: {}", paint(ID, &example.slug), example.name);
    println!("use when: {}", example.use_when);
    println!("files:");
    for file in &example.files {
        println!("  {}", file.path);
    }
    for file in &example.files {
        println!();
        println!("{}", paint(BOLD, format!("==> {} <==", file.path)));
        match std::str::from_utf8(&file.contents) {
            Ok(text) => {
                print!("{}", printable(text));
                if !text.is_empty() && !text.ends_with('\n') {
                    println!();
                }
            }
            Err(_) => println!(
                "{}",
                paint(
                    DIM,
                    format!(
                        "(not UTF-8 text, {} bytes: `--format json` carries it in base64)",
                        file.contents.len()
                    )
                )
            ),
        }
    }
}

pub fn kinds(kinds: &[KindSchema]) {
    if kinds.is_empty() {
        println!("target kinds: none");
        return;
    }
    println!("{}", paint(BOLD, "target kinds:"));
    for kind in kinds {
        println!(
            "  {}: {}",
            paint(ID, &kind.name),
            first_sentence(&kind.docs)
        );
        for example in &kind.examples {
            println!("    {} - {}", example.slug, paint(DIM, &example.use_when));
        }
    }
}

/// `once query actions`: per planned capability a header, then each action's id and static
/// key, what it does, and its inputs and outputs.
pub fn action_plan(plan: &once_analysis::ActionPlan) {
    use once_model::action::ActionStep;
    for step in &plan.steps {
        println!(
            "{} {} {}",
            paint(ID, &step.target),
            paint(BOLD, &step.capability),
            paint(DIM, format!("({})", step.kind))
        );
        if !step.implemented {
            println!("  {}", paint(DIM, "no implementation: nothing to run"));
        }
        for planned in &step.actions {
            let action = &planned.action;
            println!(
                "  {} {}",
                paint(BOLD, &action.id),
                paint(DIM, planned.static_key.to_hex())
            );
            let what = match &action.step {
                ActionStep::Run(command) => {
                    let mut line = format!("run {}", once_build::shell_words(&command.argv));
                    if !command.cwd.is_empty() {
                        line.push_str(&format!(" (in {})", command.cwd));
                    }
                    for (name, value) in &command.env {
                        line.push_str(&format!(
                            " {name}={}",
                            once_build::shell_words(std::slice::from_ref(value))
                        ));
                    }
                    if command.success_exit_codes != [0] {
                        line.push_str(&format!(" exit codes {:?}", command.success_exit_codes));
                    }
                    for probe in &command.probes {
                        line.push_str(&format!(" (keyed by `{}`)", once_build::shell_words(probe)));
                    }
                    line
                }
                ActionStep::WriteFile {
                    path, executable, ..
                } => format!(
                    "write {path}{}",
                    if *executable { " (executable)" } else { "" }
                ),
                ActionStep::Copy { from, to } => format!("copy {from} -> {to}"),
                ActionStep::Symlink { to, link } => format!("symlink {link} -> {to}"),
                ActionStep::MakeDir { path } => format!("mkdir {path}"),
                ActionStep::MaterializeHostFile { source, to } => {
                    format!("materialize host file {source} -> {to}")
                }
            };
            println!("    {what}");
            if !action.inputs.is_empty() {
                println!("    inputs:  {}", action.inputs.join(" "));
            }
            if !action.outputs.is_empty() {
                println!("    outputs: {}", action.outputs.join(" "));
            }
            if !action.cacheable {
                println!("    {}", paint(DIM, "not cacheable"));
            }
        }
        if !step.default_outputs.is_empty() {
            println!("  default outputs: {}", step.default_outputs.join(" "));
        }
        diagnostics(&step.diagnostics);
    }
}

pub fn diagnostics(diagnostics: &[LocatedDiagnostic]) {
    for located in diagnostics {
        let d = &located.diagnostic;
        let (style, word) = match d.severity {
            Severity::Error => (ERROR, "error"),
            Severity::Warning => (WARNING, "warning"),
            Severity::Info => (INFO, "info"),
        };
        println!(
            "{}: {}",
            paint(style, format!("{word}[{}]", d.code)),
            paint(BOLD, &d.message)
        );
        match (&d.file, located.range) {
            (Some(file), Some(range)) => println!(
                "  {} {file}:{}:{}",
                paint(DIM, "-->"),
                range.start.line,
                range.start.column
            ),
            (Some(file), None) => println!("  {} {file}", paint(DIM, "-->")),
            _ => {}
        }
        let scope: Vec<String> = [
            d.target.as_ref().map(|t| format!("target `{t}`")),
            d.attribute.as_ref().map(|a| format!("attribute `{a}`")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !scope.is_empty() {
            println!("  {} {}", paint(DIM, "in"), scope.join(", "));
        }
        for repair in &d.repairs {
            println!("  {} {repair}", paint(DIM, "= help:"));
        }
    }
}

/// What `validate-workspace --fix` changed, one line per fix.
pub fn fixed(fixed: &[once_analysis::AppliedFix]) {
    for fix in fixed {
        let at = fix.range.map_or(String::new(), |r| {
            format!(":{}:{}", r.start.line, r.start.column)
        });
        println!(
            "{} {}{at} [{}]: {}",
            paint(OK, "fixed"),
            fix.file,
            fix.code,
            fix.title
        );
    }
    if fixed.is_empty() {
        println!("nothing to fix");
    }
    println!();
}

pub fn validation(validation: &Validation) {
    diagnostics(&validation.diagnostics);
    if !validation.diagnostics.is_empty() {
        println!();
    }
    let counts = validation.counts();
    let (errors, warnings) = (counts.errors, counts.warnings);
    if validation.valid {
        let suffix = if warnings > 0 {
            format!(" ({})", count(warnings, "warning"))
        } else {
            String::new()
        };
        println!(
            "{} {}{suffix}",
            paint(OK, "workspace valid:"),
            count(validation.target_count, "target")
        );
    } else {
        println!(
            "{} {}, {} across {}",
            paint(ERROR, "workspace invalid:"),
            count(errors, "error"),
            count(warnings, "warning"),
            count(validation.target_count, "target")
        );
    }
}

pub fn target_validation(validation: &Validation) {
    diagnostics(&validation.diagnostics);
    if validation.valid {
        println!("{}", paint(OK, "target valid"));
    } else {
        println!(
            "{} {}",
            paint(ERROR, "target invalid:"),
            count(validation.counts().errors, "error")
        );
    }
}

pub fn tests(tests: &[TestTarget]) {
    if tests.is_empty() {
        println!("tests: none");
        return;
    }
    println!("{}", paint(BOLD, format!("tests ({}):", tests.len())));
    for test in tests {
        let runner = test
            .runner
            .as_deref()
            .map_or(String::new(), |r| format!(" runner={r}"));
        let labels = if test.labels.is_empty() {
            String::new()
        } else {
            format!(" [{}]", test.labels.join(", "))
        };
        println!(
            "  {} {}{runner}{labels}",
            paint(ID, &test.id),
            paint(DIM, format!("({})", test.kind))
        );
    }
}

pub fn affected_tests(affected: &AffectedTests) {
    let tests = &affected.tests;
    if tests.is_empty() {
        println!("affected tests: none");
    } else {
        affected_test_list(tests);
    }
    for warning in &affected.warnings {
        println!("{}: {warning}", paint(WARNING, "warning"));
    }
}

fn affected_test_list(tests: &[AffectedTest]) {
    println!(
        "{}",
        paint(BOLD, format!("affected tests ({}):", tests.len()))
    );
    for test in tests {
        println!(
            "  {} {}",
            paint(ID, &test.id),
            paint(DIM, format!("({})", test.kind))
        );
        for reason in &test.reasons {
            println!("    - {reason}");
        }
    }
}

/// A header line, then the fetched text. Control characters other than newline and tab
/// are shown as `�` so fetched bytes cannot drive the terminal; `--format json` has the
/// exact content.
pub fn external_source(fetched: &once_fetch::FetchedSource) {
    let size = if fetched.truncated {
        format!("{} (truncated)", count(fetched.byte_count, "byte"))
    } else {
        count(fetched.byte_count, "byte")
    };
    println!(
        "{} {} · {} · {} · sha256 {}",
        paint(BOLD, "fetched"),
        paint(ID, &fetched.url),
        size,
        fetched.content_type.as_deref().unwrap_or("no content type"),
        fetched.content_digest
    );
    let shown = printable(&fetched.content);
    let mut stdout = crate::output::human_stdout();
    let _ = std::io::Write::write_all(&mut stdout, shown.as_bytes());
    if !shown.is_empty() && !shown.ends_with('\n') {
        println!();
    }
}

pub fn edit_result(outcome: &once_analysis::EditOutcome) {
    match outcome {
        once_analysis::EditOutcome::Applied { path, changed, .. } => {
            if *changed {
                println!("{} {path}", paint(OK, "edited"));
            } else {
                println!("{} {path} (no change)", paint(OK, "unchanged"));
            }
        }
        once_analysis::EditOutcome::Rejected {
            path,
            failed_operation,
            diagnostics: found,
        } => {
            diagnostics(found);
            let which = failed_operation.map_or(String::new(), |i| format!(" at operations[{i}]"));
            println!(
                "{} {path} is unchanged",
                paint(ERROR, format!("edit rejected{which}:"))
            );
        }
    }
}

pub fn materialized(done: &once_analysis::Materialized) {
    let plan = &done.plan;
    for path in &plan.created {
        println!("created   {path}");
    }
    for path in &plan.unchanged {
        println!("unchanged {path}");
    }
    for (path, reason) in &plan.conflicts {
        println!("{} {path}: {reason}", paint(ERROR, "conflict "));
    }
    if !plan.conflicts.is_empty() {
        println!(
            "{} nothing was written",
            paint(
                ERROR,
                format!("{}:", count(plan.conflicts.len(), "conflict"))
            )
        );
        return;
    }
    for target in &done.targets {
        println!("target    {} ({})", target.id, target.kind);
    }
    for warning in &plan.warnings {
        println!("{} {warning}", paint(WARNING, "warning:"));
    }
    if let Some(validation) = &done.validation {
        println!();
        self::validation(validation);
    }
}

pub fn module_contract(contract: &once_analysis::ModuleContract) {
    println!("{}", paint(BOLD, "Register modules in the root once.toml:"));
    print!("{}", contract.registration);
    println!();
    println!("{}", paint(BOLD, "Declaration helpers:"));
    for helper in &contract.helpers {
        println!("  {}", helper.signature);
        println!("      {}", paint(DIM, &helper.purpose));
    }
    println!();
    println!("{}", paint(BOLD, "Schema invariants:"));
    for rule in contract
        .schema_invariants
        .iter()
        .chain(&contract.load_contract)
    {
        println!("  - {rule}");
    }
    println!();
    println!("{}", paint(BOLD, "Maintenance loop:"));
    for (i, step) in contract.maintenance_loop.iter().enumerate() {
        println!("  {}. {step}", i + 1);
    }
    println!();
    println!("{} {}", paint(BOLD, "Starter:"), contract.starter_path);
    print!("{}", contract.starter);
}

pub fn module_validation(validation: &once_analysis::ModuleValidation) {
    diagnostics(&validation.diagnostics);
    if !validation.diagnostics.is_empty() {
        println!();
    }
    let kinds: Vec<&str> = validation
        .target_kinds
        .iter()
        .map(|k| k.name.as_str())
        .collect();
    if validation.valid {
        println!(
            "{} {} declares {}: {}",
            paint(OK, "module valid:"),
            validation.path,
            count(kinds.len(), "kind"),
            kinds.join(", ")
        );
    } else {
        println!("{} {}", paint(ERROR, "module invalid:"), validation.path);
    }
}

/// `once query script`: the diagnostics, then the contract when it is valid.
pub fn script_validation(validation: &once_analysis::ScriptValidation) {
    diagnostics(&validation.diagnostics);
    if !validation.diagnostics.is_empty() {
        println!();
    }
    if !validation.valid {
        println!(
            "{} {}",
            paint(ERROR, "script invalid:"),
            printable(&validation.path)
        );
        return;
    }
    let contract = &validation.contract;
    let mut runtime = vec![contract.runtime.as_str()];
    runtime.extend(contract.runtime_args.iter().map(String::as_str));
    println!(
        "{} {} runs with `{}`",
        paint(OK, "script valid:"),
        printable(&validation.path),
        printable(&runtime.join(" "))
    );
    if !validation.has_directives {
        println!("  no `once` directives: nothing is declared, so nothing is cached");
    }
    let lists: [(&str, &Vec<String>); 6] = [
        ("inputs", &contract.inputs),
        ("outputs", &contract.outputs),
        ("needs", &contract.needs),
        ("fingerprints", &contract.fingerprints),
        ("env", &contract.env),
        ("runtime args", &contract.runtime_args),
    ];
    for (name, values) in lists.iter().take(5) {
        if !values.is_empty() {
            let shown: Vec<String> = values.iter().map(|v| printable(v).into_owned()).collect();
            println!("  {} {}", paint(DIM, format!("{name}:")), shown.join(", "));
        }
    }
    if let Some(cwd) = &contract.cwd {
        println!("  {} {}", paint(DIM, "cwd:"), printable(cwd));
    }
    if contract.output_symlinks != once_model::script::OutputSymlinks::default() {
        println!(
            "  {} {}",
            paint(DIM, "output symlinks:"),
            contract.output_symlinks.as_str()
        );
    }
}

/// One line per record, newest first: time (UTC), subject, status, cache state, exit
/// code, action digest and action id.
pub fn evidence(records: &[once_evidence::EvidenceRecord], subject: Option<&str>) {
    if records.is_empty() {
        match subject {
            Some(subject) => println!("no evidence for `{}`", printable(subject)),
            None => println!("no evidence recorded"),
        }
        return;
    }
    for record in records {
        let evidence = &record.evidence;
        let status = match evidence.status {
            once_evidence::EvidenceStatus::Passed => paint(OK, "passed"),
            once_evidence::EvidenceStatus::Failed => paint(ERROR, "failed"),
        };
        // No exit code is not always a signal: a full disk while capturing the output
        // fails the action too.
        let exit = evidence
            .exit_code
            .map_or_else(|| "none".to_owned(), |code| code.to_string());
        let action = evidence
            .action
            .as_deref()
            .map(|action| format!(" {}", paint(DIM, printable(action))))
            .unwrap_or_default();
        println!(
            "{} {} {status} cache={} exit={exit} action={}{action}",
            paint(DIM, utc_time(record.created_at_unix_ms)),
            paint(ID, printable(&evidence.subject.to_string())),
            evidence.cache.as_str(),
            evidence.action_digest.to_hex(),
        );
    }
}

/// `2026-12-01T03:04:05.678Z` for milliseconds since the Unix epoch.
fn utc_time(unix_ms: u64) -> String {
    let seconds = unix_ms / 1000;
    let (hour, minute, second) = (seconds / 3600 % 24, seconds / 60 % 60, seconds % 60);
    // Days to a civil date (Howard Hinnant's algorithm, for days after 1970-01-01).
    let days = seconds / 86_400 + 719_468;
    let era = days / 146_097;
    let day_of_era = days % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{:03}Z",
        unix_ms % 1000
    )
}

/// The first lines of a failure message shown under its case.
const MESSAGE_LINES: usize = 8;

/// `once query test-results`: the target's status and counts, then each case that failed
/// or was flaky with its place and the first lines of its last message.
pub fn test_results(results: &once_test_results::TestResults, summary_only: bool) {
    use once_test_results::{CaseStatus, TargetStatus};
    let status = match results.status {
        TargetStatus::Passed => paint(OK, "PASS"),
        TargetStatus::Flaky => paint(WARNING, "FLAKY"),
        TargetStatus::Failed => paint(ERROR, "FAIL"),
        TargetStatus::TimedOut => paint(ERROR, "TIMEOUT"),
    };
    let summary = &results.summary;
    println!(
        "{status} {} {} {}: {} passed, {} failed, {} skipped, {} flaky",
        paint(ID, printable(&results.target)),
        paint(DIM, format!("({})", printable(&results.runner.kind))),
        count(summary.total as usize, "case"),
        summary.passed,
        summary.failed,
        summary.skipped,
        summary.flaky
    );
    if let Some(omitted) = &results.omitted {
        println!(
            "  {}",
            paint(
                WARNING,
                format!(
                    "{} cases are not listed ({} passed, {} failed, {} skipped, {} flaky): a \
                     record lists at most {} cases ({} MiB), failures first; the log has the \
                     whole output",
                    omitted.total,
                    omitted.passed,
                    omitted.failed,
                    omitted.skipped,
                    omitted.flaky,
                    once_test_results::write::CASE_LIMIT,
                    once_test_results::write::CASES_BYTE_LIMIT >> 20
                )
            )
        );
    }
    if !summary_only {
        for case in &results.cases {
            let label = match case.status {
                CaseStatus::Failed => paint(ERROR, "FAIL"),
                CaseStatus::Flaky => paint(WARNING, "FLAKY"),
                CaseStatus::Passed | CaseStatus::Skipped => continue,
            };
            let place = match (&case.file, case.line) {
                (Some(file), Some(line)) => format!(" {}", paint(DIM, format!("{file}:{line}"))),
                (Some(file), None) => format!(" {}", paint(DIM, file)),
                _ => String::new(),
            };
            println!("  {label} {}{place}", printable(&case.id));
            if case.status == CaseStatus::Failed
                && let Some(message) = case.last_message()
            {
                let lines: Vec<&str> = message.lines().collect();
                for line in lines.iter().take(MESSAGE_LINES) {
                    println!("      {}", printable(line));
                }
                if lines.len() > MESSAGE_LINES {
                    println!(
                        "      {}",
                        paint(
                            DIM,
                            format!("… {} more line(s)", lines.len() - MESSAGE_LINES)
                        )
                    );
                }
            }
        }
    }
    for log in &results.artifacts.logs {
        println!("  {} {}", paint(DIM, "log:"), printable(log));
    }
}

/// `once init`: each manifest's status (with its diff when `diffs`), what was left
/// alone, the warnings, and the validation after a write.
pub fn init(plan: &once_analysis::init::InitPlan, diffs: bool, after: Option<&Validation>) {
    for manifest in &plan.manifests {
        let status = if manifest.rejected() {
            paint(ERROR, "rejected ")
        } else if !manifest.changed() {
            "unchanged".to_owned()
        } else if manifest.before.is_none() {
            paint(OK, "created  ")
        } else {
            paint(OK, "updated  ")
        };
        println!("{status} {}", manifest.path);
        for note in &manifest.left_alone {
            println!("          {}", paint(DIM, format!("left alone: {note}")));
        }
        if let once_analysis::EditOutcome::Rejected {
            diagnostics: found, ..
        } = &manifest.outcome
        {
            diagnostics(found);
        }
        if diffs && manifest.changed() && !manifest.rejected() {
            for line in manifest.diff().lines() {
                let painted = match line.as_bytes().first() {
                    Some(b'+') if !line.starts_with("+++") => paint(OK, printable(line)),
                    Some(b'-') if !line.starts_with("---") => paint(ERROR, printable(line)),
                    Some(b'@') => paint(INFO, printable(line)),
                    _ => printable(line).into_owned(),
                };
                println!("{painted}");
            }
        }
    }
    for warning in &plan.warnings {
        println!("{} {}", paint(WARNING, "warning:"), printable(warning));
    }
    if let Some(validation) = after {
        println!();
        self::validation(validation);
    }
}

#[cfg(test)]
mod evidence_tests {
    #[test]
    fn utc_times() {
        assert_eq!(super::utc_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::utc_time(951_782_400_001), "2000-02-29T00:00:00.001Z");
        assert_eq!(
            super::utc_time(1_812_345_678_901),
            "2027-06-07T05:21:18.901Z"
        );
    }
}
