//! Work-groups that meet at barriers, run without suspending anything: each kernel that calls
//! `barrier` is rewritten, in clang's unoptimized IR of the program, into a function that runs
//! its whole work-group. Each stretch of the kernel (from its start, or from just after a
//! barrier, to its next barrier or its end) becomes a loop over the work-items of its own,
//! running a copy of the stretch's blocks for each work-item that stopped where the stretch
//! starts; then the work-group goes on with the stretch where its first work-item not at its
//! end stopped. A work-item's own variables that live across a barrier get one slot per
//! work-item, unless they hold the same value in every work-item ([`uniform`]): each
//! stretch's work-items then start from the one value the stretch began with. The rest stay
//! the registers they were. Where the work-items stopped is kept once for all while they stop
//! at the same place (always, when no stop of the stretch is in a block only some of them
//! run), and for each one from the first that stops elsewhere. Splitting at barriers when
//! compiling is how POCL runs work-groups on a CPU; asyncify's unwinding and rewinding of
//! each work-item's stack at each barrier cost ~60 ns a time, and one loop that dispatched
//! every work-item to its stretch ~10 ns.
//!
//! The rewrite is done on the IR's text and checked by compiling it: anything it does not
//! recognize (a barrier reached through another function, a `phi` or an alloca outside the
//! entry of a kernel that meets at barriers, a value used across a barrier without its
//! memory) leaves the program to asyncify.
//!
//! Invariants of the rewritten kernel: every value used after a barrier is read from memory
//! the work-item reached it with (clang's unoptimized IR keeps each variable in an alloca, and
//! a stretch's copy names only the values it defines, so the compile refuses any other), or is
//! a work-item id computed again; each stretch's loop takes every work-item in the runtime's
//! order (x fastest, then y, then z) and keeps its local ids in registers, from which the
//! kernel's own `get_local_id(d)` and `get_global_id(d)` are computed (a variable that only
//! ever holds one of them gets no slot); where another function reads the ids (a helper, a
//! dimension not constant) the loop also writes them to the runtime's memory, and those read
//! `__accelhost_local_id`, not OpenCL's `readnone` `get_local_id`, which the optimizer may
//! hoist out of the loop. Work-items that reach different barriers (which OpenCL leaves
//! undefined) each go on from their own, a stretch at a time; a variable found the same in
//! all then holds, in each, the value the last stretch's work-items stopped with.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

mod ir;
mod uniform;

use ir::{
    Block, Use, Uses, Variable, branches_to, stored_value, successors, values_named, variable_uses,
};

/// How OpenCL C 1.2's `barrier` reaches clang's IR (its one overload, mangled).
const BARRIER_CALL: &str = "call void @_Z7barrierj(";
/// The work-item functions whose values change from one work-item to the next, with the
/// runtime's function that reads them from memory.
const PER_ITEM: [(&str, &str); 2] = [
    ("@_Z12get_local_idj(", "@__accelhost_local_id("),
    ("@_Z13get_global_idj(", "@__accelhost_global_id("),
];
/// Where a work-item stopped: at its end.
const DONE: i32 = -1;
/// The common stop of a stretch's work-items before the first of them stops (barriers count
/// from 1).
const UNSET: i32 = 0;
/// The prefix given to clang's numbered values and blocks in a rewritten kernel, which then
/// need no numbering in order.
const RENAMED: &str = "v";

/// The runtime's functions the rewritten kernels call.
const DECLARATIONS: &str = "declare i32 @__accelhost_group_items()\n\
declare void @__accelhost_group_take(i32, i32)\n\
declare i32 @__accelhost_local_size(i32)\n\
declare i32 @__accelhost_group_base(i32)\n\
declare void @__accelhost_set_item(i32, i32, i32)\n\
declare void @__accelhost_stops_apart(i32, i32, i32)\n\
declare void @__accelhost_stops_moved(i32, i32, i32, i32)\n\
declare i32 @__accelhost_local_id(i32)\n\
declare i32 @__accelhost_global_id(i32)\n";
/// Where a work-item's stop (a barrier, or its end) goes on to in a stretch's copy.
const STOPPED: &str = "__stopped";
/// The values a stretch's loop keeps its work-item's local ids in (x, y, z).
const COORDINATES: [&str; 3] = ["__x", "__y", "__z"];

/// clang's unoptimized IR (`-O2 -Xclang -disable-llvm-passes`) of a program, with every
/// kernel among `kernels` that calls barrier running its whole work-group (named in the
/// second value); `None` when the program is not one this rewrite takes.
pub fn rewrite(ir: &str, kernels: &[&str]) -> Option<(String, Vec<String>)> {
    let functions = functions(ir);
    if ir
        .lines()
        .any(|l| l.starts_with('%') && l.contains(" = type ") && numbered(&l[1..]))
    {
        // Numbered struct types would be renamed with the values.
        return None;
    }
    let mut grouped = Vec::new();
    for function in &functions {
        if !function.body.iter().any(|l| is_barrier(l)) {
            continue;
        }
        if !kernels.contains(&function.name.as_str()) {
            return None;
        }
        grouped.push(function.name.clone());
    }
    if grouped.is_empty() {
        return None;
    }
    // A kernel running its work-group is called only by the NDRange loop, or by its shim.
    let split: HashSet<&str> = grouped.iter().map(String::as_str).collect();
    for function in &functions {
        let shim_of = function.name.strip_prefix("__accelhost_args_");
        for line in &function.body {
            if values_named(line, "@")
                .any(|called| split.contains(called) && shim_of != Some(called))
            {
                return None;
            }
        }
    }
    // The runtime's memory must hold the current work-item's ids while a split kernel runs
    // when some other function reads them there: a helper, or a kernel called as one.
    let ids_in_memory = functions.iter().any(|function| {
        let name = function.name.as_str();
        function.body.iter().any(|line| {
            if split.contains(name) {
                values_named(line, "@").any(|called| called != name && kernels.contains(&called))
            } else {
                !kernels.contains(&name) && reads_item_memory(line)
            }
        })
    });
    let opaque = ir.contains(" = alloca ptr") || ir.contains("(ptr ") || ir.contains(", ptr ");
    let lines: Vec<&str> = ir.lines().collect();
    let mut out = String::with_capacity(ir.len() * 2);
    let mut at = 0;
    for function in &functions {
        for line in &lines[at..function.header] {
            out.push_str(line);
            out.push('\n');
        }
        if grouped.contains(&function.name) {
            out.push_str(&group_function(function, opaque, ids_in_memory)?);
        } else {
            out.push_str(lines[function.header]);
            out.push('\n');
            for line in &function.body {
                if function.name.starts_with("__accelhost_args_")
                    || !kernels.contains(&function.name.as_str())
                {
                    out.push_str(&per_item_reads(line));
                } else {
                    out.push_str(line);
                }
                out.push('\n');
            }
            out.push_str("}\n");
        }
        at = function.end + 1;
    }
    for line in &lines[at..] {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(DECLARATIONS);
    Some((out, grouped))
}

/// One function definition of the IR: the line numbers of its header and closing brace.
struct Function<'a> {
    name: String,
    header: usize,
    header_line: &'a str,
    end: usize,
    body: Vec<&'a str>,
}

fn functions(ir: &str) -> Vec<Function<'_>> {
    let lines: Vec<&str> = ir.lines().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("define ") && line.trim_end().ends_with('{') {
            let name = line
                .split_once('@')
                .and_then(|(_, rest)| rest.split_once('('))
                .map(|(name, _)| name.trim_matches('"').to_owned())
                .unwrap_or_default();
            let header = i;
            let mut end = i + 1;
            while end < lines.len() && lines[end] != "}" {
                end += 1;
            }
            found.push(Function {
                name,
                header,
                header_line: line,
                end,
                body: lines[header + 1..end.min(lines.len())].to_vec(),
            });
            i = end;
        }
        i += 1;
    }
    found
}

fn is_barrier(line: &str) -> bool {
    line.trim_start().starts_with(BARRIER_CALL)
}

fn numbered(name: &str) -> bool {
    name.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// Whether `line` reads a work-item id: OpenCL's function, or the runtime's from memory.
fn reads_item_memory(line: &str) -> bool {
    PER_ITEM
        .iter()
        .any(|(from, to)| line.contains(from) || line.contains(to))
}

/// A work-item id a kernel reads: `get_local_id(dim)`, or `get_global_id(dim)`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ItemId {
    global: bool,
    dim: u32,
}

impl ItemId {
    /// The id a line defining `%name` reads with a constant dimension, with the name.
    fn read_by(line: &str) -> Option<(&str, ItemId)> {
        let (defined, call) = line.trim_start().split_once(" = call i32 ")?;
        let name = defined.strip_prefix('%')?;
        let (global, rest) = if let Some(rest) = call.strip_prefix("@_Z12get_local_idj(") {
            (false, rest)
        } else {
            (true, call.strip_prefix("@_Z13get_global_idj(")?)
        };
        let (argument, _) = rest.split_once(')')?;
        let dim = argument.split_whitespace().last()?.parse().ok()?;
        Some((name, ItemId { global, dim }))
    }

    /// The instruction (after `%name = `) that computes it from the stretch's coordinates
    /// and the work-group's first global ids: OpenCL answers 0 past the third dimension.
    fn computed(self) -> String {
        let Some(coordinate) = COORDINATES.get(self.dim as usize) else {
            return "add i32 0, 0".to_owned();
        };
        if self.global {
            format!("add i32 %__base{}, %{coordinate}", self.dim)
        } else {
            format!("add i32 %{coordinate}, 0")
        }
    }
}

/// `line` with OpenCL's work-item reads replaced by the runtime's (and their call's
/// attributes, which say `readnone`, dropped).
fn per_item_reads(line: &str) -> String {
    let Some((from, to)) = PER_ITEM.iter().find(|(from, _)| line.contains(from)) else {
        return line.to_owned();
    };
    let replaced = line.replace(from, to);
    match replaced.rsplit_once(" #") {
        Some((code, group)) if group.bytes().all(|b| b.is_ascii_digit()) => code.to_owned(),
        _ => replaced,
    }
}

/// `line` with clang's numbered values (`%7`) and block labels (`7:`) given names.
fn renamed(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    if let Some((label, rest)) = line.split_once(':')
        && !label.is_empty()
        && label.bytes().all(|b| b.is_ascii_digit())
    {
        let _ = write!(out, "{RENAMED}{label}:{rest}");
        return out;
    }
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '"' {
            quoted = !quoted;
        }
        out.push(c);
        if c == '%' && !quoted && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push_str(RENAMED);
        }
    }
    out
}

/// The text of `function` rewritten to run its whole work-group, or `None`; with
/// `ids_in_memory`, each work-item's ids are also written where the runtime's functions read
/// them.
fn group_function(function: &Function, opaque: bool, ids_in_memory: bool) -> Option<String> {
    let body = without_lifetimes(function.body.iter().map(|l| renamed(l)).collect());
    if body
        .iter()
        .any(|l| l.contains(" = phi ") || l.contains("%\""))
    {
        return None;
    }
    let header = renamed(function.header_line);
    let params = params(&header);
    // The entry's allocas, then the code.
    let mut variables = Vec::new();
    let mut code = body.iter().peekable();
    while let Some(line) = code.peek() {
        let Some(variable) = alloca(line) else { break };
        variables.push(variable?);
        code.next();
    }
    let ptr = |ty: &str| pointer(ty, opaque);
    let Stretches {
        blocks,
        resumes,
        ids,
        reads_memory,
    } = blocks_between_barriers(code, opaque)?;
    let ids_in_memory = ids_in_memory || reads_memory;
    let uses = variable_uses(&variables, &blocks);
    let graph = successors(&blocks);
    let stops: Vec<bool> = blocks.iter().map(|b| branches_to(b, STOPPED)).collect();
    let mut slotted = per_item_variables(&variables, &blocks, &graph, &uses, &params)?;
    let recomputed = recomputed_ids(&variables, &uses, &ids, &slotted);
    slotted.retain(|name| !recomputed.iter().any(|(held, _)| held.name == *name));
    let uniformity = uniform::uniformity(
        &variables,
        &blocks,
        &graph,
        &stops,
        &uses,
        &params,
        MOST_LIVENESS_STEPS,
    );
    let shared: Vec<&Variable> = variables
        .iter()
        .filter(|v| slotted.contains(&v.name) && uniformity.variables.contains(&v.name))
        .collect();
    slotted.retain(|name| !uniformity.variables.contains(name));
    let per_item: Vec<&Variable> = variables
        .iter()
        .filter(|v| slotted.contains(&v.name))
        .collect();

    // The names each stretch's loop gets a copy of: its blocks and values, its work-item's
    // slots, where it saves its stop and where it goes next.
    let mut local: HashSet<&str> = HashSet::new();
    for block in &blocks {
        local.insert(&block.label);
        for line in &block.lines {
            if let Some((defined, _)) = line.trim_start().split_once(" = ")
                && let Some(name) = defined.strip_prefix('%')
            {
                local.insert(name);
            }
        }
    }
    local.extend(per_item.iter().map(|v| v.name.as_str()));
    local.extend(["__item.end", STOPPED]);
    local.extend(COORDINATES);
    if (resumes as usize + 1).saturating_mul(blocks.len()) > MOST_LIVENESS_STEPS {
        return None;
    }
    let labels: HashMap<&str, usize> = blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.label.as_str(), i))
        .collect();
    let stretches: Vec<(String, Vec<usize>)> = (0..=resumes)
        .map(|stretch| {
            let start = if stretch == 0 {
                "__start".to_owned()
            } else {
                format!("__resume.{stretch}")
            };
            let reached = labels
                .get(start.as_str())
                .map_or_else(Vec::new, |&at| stretch_blocks(&graph, at));
            (start, reached)
        })
        .collect();
    // Each stretch also starts its work-item: a slot's address per variable kept in one, two
    // lines per id computed again, and the loop's own lines.
    let per_stretch = per_item.len() + 2 * recomputed.len() + 6 * shared.len() + STRETCH_LOOP_LINES;
    let copied: usize = stretches
        .iter()
        .flat_map(|(_, reached)| reached.iter().map(|&b| blocks[b].lines.len() + 1))
        .sum::<usize>()
        .saturating_add((resumes as usize + 1).saturating_mul(per_stretch));
    if copied > MOST_COPIED_LINES {
        return None;
    }
    let kernel = SplitKernel {
        opaque,
        per_item: &per_item,
        shared: &shared,
        recomputed: &recomputed,
        local: &local,
        ids_in_memory,
    };
    let mut text = format!("{header}\n__entry:\n");
    for variable in variables.iter().filter(|v| !slotted.contains(&v.name)) {
        let _ = writeln!(text, "{}", variable.line);
    }
    kernel.write_entry(&mut text);
    for (stretch, (start, reached)) in (0..=resumes).zip(&stretches) {
        // Its work-items all stop at the same place when no stop is in a block some of them
        // run and others not.
        let lockstep = reached
            .iter()
            .filter(|&&b| stops[b])
            .all(|&b| uniformity.together[b]);
        let reached: Vec<&Block> = reached.iter().map(|&b| &blocks[b]).collect();
        kernel.write_stretch(&mut text, stretch, start, &reached, lockstep);
    }
    write_scan(&mut text, &ptr("i32"), resumes);
    Some(text)
}

/// What each stretch's loop of a split kernel is written with.
struct SplitKernel<'a> {
    opaque: bool,
    /// The variables with a slot per work-item.
    per_item: &'a [&'a Variable],
    /// The variables the same in every work-item, which the stretch begins and stops with.
    shared: &'a [&'a Variable],
    /// The variables holding a work-item id, computed again for each work-item.
    recomputed: &'a [(&'a Variable, ItemId)],
    /// The names each stretch's copy suffixes.
    local: &'a HashSet<&'a str>,
    /// Whether the work-item's ids are written where the runtime reads them.
    ids_in_memory: bool,
}

impl SplitKernel<'_> {
    /// Writes the entry of the split kernel after its own variables: the loops' controls, the
    /// work-group's sizes and first ids, the slots and the shared variables' two values.
    fn write_entry(&self, text: &mut String) {
        let ptr = |ty: &str| pointer(ty, self.opaque);
        let i32p = ptr("i32");
        for control in ["__wi", "__scan", "__stop", "__apart", "__common"]
            .iter()
            .chain(&COORDINATES)
        {
            let _ = writeln!(text, "  %{control}.addr = alloca i32, align 4");
        }
        // The work-items' stops are one, common to all, until one stops elsewhere; from then on
        // (`__apart`) each one's is in `__points`.
        let _ = writeln!(text, "  store i32 0, {i32p} %__apart.addr, align 4");
        text.push_str("  %__n = call i32 @__accelhost_group_items()\n");
        // The sizes the loops wrap x and y at, and where the group's global ids start.
        for dim in 0..2 {
            let _ = writeln!(
                text,
                "  %__size{dim} = call i32 @__accelhost_local_size(i32 {dim})"
            );
        }
        for dim in 0..3 {
            let _ = writeln!(
                text,
                "  %__base{dim} = call i32 @__accelhost_group_base(i32 {dim})"
            );
        }
        let _ = writeln!(
            text,
            "  call void @__accelhost_group_take(i32 4, i32 4)\n  %__points = alloca i32, i32 %__n, align 4"
        );
        for variable in self.per_item {
            let Variable {
                name, ty, align, ..
            } = variable;
            let pty = ptr(ty);
            let _ = writeln!(
                text,
                "  call void @__accelhost_group_take(i32 ptrtoint ({pty} getelementptr ({ty}, {pty} null, i32 1) to i32), i32 {align})\n  \
                 %__all.{name} = alloca {ty}, i32 %__n, align {align}"
            );
        }
        // A variable the same in every work-item has the value its stretch began with, and the
        // one its work-items stopped with.
        for Variable {
            name, ty, align, ..
        } in self.shared
        {
            let _ = writeln!(
                text,
                "  %__in.{name} = alloca {ty}, align {align}\n  %__out.{name} = alloca {ty}, align {align}"
            );
        }
        text.push_str("  br label %__loop.0\n");
    }

    /// Writes the loop of stretch `stretch` over the work-items that stopped where it starts
    /// (`start`), running the blocks it `reached`; when `lockstep`, every one of them stops
    /// at the same place, which is kept once, after the loop.
    fn write_stretch(
        &self,
        text: &mut String,
        stretch: u32,
        start: &str,
        reached: &[&Block],
        lockstep: bool,
    ) {
        let s = stretch_suffix(stretch);
        let i32p = pointer("i32", self.opaque);
        let _ = writeln!(text, "__loop.{stretch}:");
        if stretch > 0 {
            self.copy_shared(text, "__out.", &format!("__began.{stretch}."), "__in.");
        }
        for control in ["__wi"].iter().chain(&COORDINATES) {
            let _ = writeln!(text, "  store i32 0, {i32p} %{control}.addr, align 4");
        }
        let _ = writeln!(
            text,
            "  store i32 {UNSET}, {i32p} %__common.addr, align 4\n  \
             %__apart.{stretch} = load i32, {i32p} %__apart.addr, align 4\n  \
             %__checks.{stretch} = icmp ne i32 %__apart.{stretch}, 0"
        );
        // A row (the work-items that differ in x) is a loop of its own inside the stretch's,
        // counted in x from 0, which the optimizer can keep in one register and step.
        let _ = writeln!(
            text,
            "  br label %__row.{stretch}\n__row.{stretch}:\n  br label %__head.{stretch}\n__head.{stretch}:"
        );
        for control in ["__wi"].iter().chain(&COORDINATES) {
            let _ = writeln!(
                text,
                "  %{control}{s} = load i32, {i32p} %{control}.addr, align 4"
            );
        }
        let _ = writeln!(
            text,
            "  %__point.at{s} = getelementptr inbounds i32, {i32p} %__points, i32 %__wi{s}"
        );
        if stretch == 0 {
            let _ = writeln!(text, "  br label %__run.0");
        } else {
            // Every work-item stopped here while their stops are common; otherwise only those
            // that did, and the others, which reached another barrier or their end (which
            // OpenCL leaves undefined), wait their turn.
            let _ = writeln!(
                text,
                "  br i1 %__checks.{stretch}, label %__check{s}, label %__run.{stretch}\n\
                 __check{s}:\n  %__saved{s} = load i32, {i32p} %__point.at{s}, align 4\n  \
                 %__mine{s} = icmp eq i32 %__saved{s}, {stretch}\n  \
                 br i1 %__mine{s}, label %__run.{stretch}, label %__item.end{s}"
            );
        }
        self.write_item_start(text, stretch, start);
        for block in reached {
            let _ = writeln!(text, "{}{s}:", block.label);
            for line in &block.lines {
                let _ = writeln!(text, "{}", suffixed(line, self.local, &s));
            }
        }
        let _ = writeln!(text, "{STOPPED}{s}:");
        self.copy_shared(text, "", &format!("__left{s}."), "__out.");
        if lockstep {
            let _ = writeln!(text, "  br label %__item.end{s}");
        } else {
            write_own_stop(text, &s, &i32p);
        }
        // The next work-item: x fastest, then y, then z, as the runtime numbers them.
        let _ = writeln!(
            text,
            "__item.end{s}:\n  %__wi.next{s} = add i32 %__wi{s}, 1\n  \
             store i32 %__wi.next{s}, {i32p} %__wi.addr, align 4\n  \
             %__x.next{s} = add i32 %__x{s}, 1\n  %__x.wraps{s} = icmp eq i32 %__x.next{s}, %__size0\n  \
             br i1 %__x.wraps{s}, label %__row.end{s}, label %__row.on{s}\n\
             __row.on{s}:\n  store i32 %__x.next{s}, {i32p} %__x.addr, align 4\n  br label %__head.{stretch}\n\
             __row.end{s}:\n  store i32 0, {i32p} %__x.addr, align 4\n  \
             %__y.next{s} = add i32 %__y{s}, 1\n  %__y.wraps{s} = icmp eq i32 %__y.next{s}, %__size1\n  \
             %__y.then{s} = select i1 %__y.wraps{s}, i32 0, i32 %__y.next{s}\n  \
             store i32 %__y.then{s}, {i32p} %__y.addr, align 4\n  \
             %__z.step{s} = zext i1 %__y.wraps{s} to i32\n  %__z.next{s} = add i32 %__z{s}, %__z.step{s}\n  \
             store i32 %__z.next{s}, {i32p} %__z.addr, align 4\n  \
             %__again{s} = icmp ult i32 %__wi.next{s}, %__n\n  \
             br i1 %__again{s}, label %__row.{stretch}, label %__done{s}\n__done{s}:"
        );
        if lockstep {
            // The stop of the last work-item is every one's: the common stop, or that of
            // each one that ran, when their stops are apart.
            let _ = writeln!(
                text,
                "  %__stop{s} = load i32, {i32p} %__stop.addr, align 4\n  \
                 br i1 %__checks.{stretch}, label %__moved{s}, label %__kept{s}\n\
                 __moved{s}:\n  %__points.at{s} = ptrtoint {i32p} %__points to i32\n  \
                 call void @__accelhost_stops_moved(i32 %__points.at{s}, i32 %__n, i32 {stretch}, i32 %__stop{s})\n  \
                 br label %__scan\n\
                 __kept{s}:\n  store i32 %__stop{s}, {i32p} %__common.addr, align 4\n  br label %__scan"
            );
        } else {
            let _ = writeln!(text, "  br label %__scan");
        }
    }

    /// Writes, for each shared variable `v`, a copy of `%{from}v` to `%{to}v` through a value
    /// named `%{through}v`.
    fn copy_shared(&self, text: &mut String, from: &str, through: &str, to: &str) {
        for Variable {
            name, ty, align, ..
        } in self.shared
        {
            let pty = pointer(ty, self.opaque);
            let _ = writeln!(
                text,
                "  %{through}{name} = load {ty}, {pty} %{from}{name}, align {align}\n  \
                 store {ty} %{through}{name}, {pty} %{to}{name}, align {align}"
            );
        }
    }

    /// Writes the start of a work-item in stretch `stretch` (`__run`): its slots, the shared
    /// variables' values the stretch began with, its ids; then on to `start`.
    fn write_item_start(&self, text: &mut String, stretch: u32, start: &str) {
        let s = stretch_suffix(stretch);
        let i32p = pointer("i32", self.opaque);
        let _ = writeln!(text, "__run.{stretch}:");
        for Variable { name, ty, .. } in self.per_item {
            let _ = writeln!(
                text,
                "  %{name}{s} = getelementptr inbounds {ty}, {} %__all.{name}, i32 %__wi{s}",
                pointer(ty, self.opaque)
            );
        }
        if stretch > 0 {
            self.copy_shared(text, "__in.", &format!("__from{s}."), "");
        }
        if self.ids_in_memory {
            let _ = writeln!(
                text,
                "  call void @__accelhost_set_item(i32 %__x{s}, i32 %__y{s}, i32 %__z{s})"
            );
        }
        for (Variable { name, align, .. }, id) in self.recomputed {
            let _ = writeln!(
                text,
                "  %__id.{name}{s} = {}\n  store i32 %__id.{name}{s}, {i32p} %{name}, align {align}",
                suffixed(&id.computed(), self.local, &s)
            );
        }
        let _ = writeln!(text, "  br label %{start}{s}");
    }
}

/// Writes where a work-item of a stretch whose work-items may stop apart stopped: at the
/// common stop (the first work-item's, which the others compare with), or in `__points`,
/// which the first to stop elsewhere fills in for those before it.
fn write_own_stop(text: &mut String, s: &str, i32p: &str) {
    let _ = writeln!(
        text,
        "  %__stop{s} = load i32, {i32p} %__stop.addr, align 4\n  \
         %__apart{s} = load i32, {i32p} %__apart.addr, align 4\n  \
         %__recorded{s} = icmp ne i32 %__apart{s}, 0\n  \
         br i1 %__recorded{s}, label %__record{s}, label %__alike{s}\n\
         __alike{s}:\n  %__was{s} = load i32, {i32p} %__common.addr, align 4\n  \
         %__same{s} = icmp eq i32 %__stop{s}, %__was{s}\n  \
         br i1 %__same{s}, label %__item.end{s}, label %__other{s}\n\
         __other{s}:\n  %__first{s} = icmp eq i32 %__was{s}, {UNSET}\n  \
         br i1 %__first{s}, label %__common{s}, label %__split{s}\n\
         __common{s}:\n  store i32 %__stop{s}, {i32p} %__common.addr, align 4\n  \
         br label %__item.end{s}\n\
         __split{s}:\n  \
         %__points.at{s} = ptrtoint {i32p} %__points to i32\n  \
         call void @__accelhost_stops_apart(i32 %__points.at{s}, i32 %__wi{s}, i32 %__was{s})\n  \
         store i32 1, {i32p} %__apart.addr, align 4\n  br label %__record{s}\n\
         __record{s}:\n  store i32 %__stop{s}, {i32p} %__point.at{s}, align 4\n  \
         br label %__item.end{s}"
    );
}

/// Writes where a split kernel goes after a stretch: to the common stop's stretch, or to
/// that of the first work-item (not at its end) in `__points`, or back.
fn write_scan(text: &mut String, i32p: &str, resumes: u32) {
    let _ = writeln!(
        text,
        "__scan:\n  %__apart = load i32, {i32p} %__apart.addr, align 4\n  \
         %__scans = icmp ne i32 %__apart, 0\n  \
         br i1 %__scans, label %__scan.all, label %__scan.common\n\
         __scan.common:\n  %__common = load i32, {i32p} %__common.addr, align 4\n  \
         switch i32 %__common, label %__return ["
    );
    for resume in 1..=resumes {
        let _ = writeln!(text, "    i32 {resume}, label %__loop.{resume}");
    }
    let _ = write!(
        text,
        "  ]\n__scan.all:\n  store i32 0, {i32p} %__scan.addr, align 4\n  br label %__scan.head\n\
         __scan.head:\n  %__i = load i32, {i32p} %__scan.addr, align 4\n  \
         %__left = icmp ult i32 %__i, %__n\n  br i1 %__left, label %__scan.item, label %__return\n\
         __scan.item:\n  %__at = getelementptr inbounds i32, {i32p} %__points, i32 %__i\n  \
         %__next = load i32, {i32p} %__at, align 4\n  %__i.next = add i32 %__i, 1\n  \
         store i32 %__i.next, {i32p} %__scan.addr, align 4\n  \
         switch i32 %__next, label %__scan.head [\n"
    );
    for resume in 1..=resumes {
        let _ = writeln!(text, "    i32 {resume}, label %__loop.{resume}");
    }
    text.push_str("  ]\n__return:\n  ret void\n}\n");
}

/// What the names of stretch `stretch`'s loop end with.
fn stretch_suffix(stretch: u32) -> String {
    format!(".__s{stretch}")
}

/// The blocks a work-item may run from `start` up to its next barrier or its end, in the
/// kernel's order.
fn stretch_blocks(graph: &[Vec<usize>], start: usize) -> Vec<usize> {
    let mut reached = vec![false; graph.len()];
    let mut work = vec![start];
    while let Some(block) = work.pop() {
        if !std::mem::replace(&mut reached[block], true) {
            work.extend(&graph[block]);
        }
    }
    (0..graph.len()).filter(|&b| reached[b]).collect()
}

/// `line` with each value or label among `names` given `suffix`.
fn suffixed(line: &str, names: &HashSet<&str>, suffix: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut rest = line;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..=at]);
        rest = &rest[at + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(rest.len());
        out.push_str(&rest[..end]);
        if names.contains(&rest[..end]) {
            out.push_str(suffix);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `ty`'s pointer type: `ptr` in opaque-pointer IR, `ty*` otherwise.
fn pointer(ty: &str, opaque: bool) -> String {
    if opaque {
        "ptr".to_owned()
    } else {
        format!("{ty}*")
    }
}

/// The kernel's code after its allocas as blocks that run one work-item up to its next
/// barrier: each barrier ends its block (saving at `%__stop.addr` where to resume) and starts
/// `__resume.N`, and `ret void` saves that the item is done, both going on to `__stopped`
/// (then `__item.end`); with how many barriers there are. A work-item id read with a
/// constant dimension becomes its computation from the stretch's coordinates
/// ([`ItemId::computed`]); other reads go to the runtime's memory. `None` for what the rewrite does not take (an alloca past the
/// entry, a value returned).
fn blocks_between_barriers<'a>(
    code: impl Iterator<Item = &'a String>,
    opaque: bool,
) -> Option<Stretches> {
    let mut blocks = vec![Block {
        label: "__start".to_owned(),
        lines: Vec::new(),
    }];
    let mut resumes = 0;
    let mut ids = HashMap::new();
    let mut reads_memory = false;
    let stop_at = pointer("i32", opaque);
    for line in code {
        let trimmed = line.trim_start();
        if trimmed.contains(" = alloca ") {
            return None;
        }
        if let Some((label, _)) = line.split_once(':')
            && !line.starts_with(' ')
            && !label.is_empty()
        {
            blocks.push(Block {
                label: label.to_owned(),
                lines: Vec::new(),
            });
            continue;
        }
        let block = blocks.last_mut()?;
        if is_barrier(line) {
            resumes += 1;
            block.lines.push(format!(
                "  store i32 {resumes}, {stop_at} %__stop.addr, align 4"
            ));
            block.lines.push(format!("  br label %{STOPPED}"));
            blocks.push(Block {
                label: format!("__resume.{resumes}"),
                lines: Vec::new(),
            });
        } else if trimmed.starts_with("ret void") {
            block.lines.push(format!(
                "  store i32 {DONE}, {stop_at} %__stop.addr, align 4"
            ));
            block.lines.push(format!("  br label %{STOPPED}"));
        } else if trimmed.starts_with("ret ") {
            return None;
        } else if let Some((name, id)) = ItemId::read_by(line) {
            block.lines.push(format!("  %{name} = {}", id.computed()));
            ids.insert(name.to_owned(), id);
        } else {
            reads_memory |= reads_item_memory(line);
            block.lines.push(per_item_reads(line));
        }
    }
    Some(Stretches {
        blocks,
        resumes,
        ids,
        reads_memory,
    })
}

/// A kernel's code cut at its barriers.
struct Stretches {
    blocks: Vec<Block>,
    /// How many barriers there are: stretch `N` starts at `__resume.N`.
    resumes: u32,
    /// The values that are work-item ids, by name.
    ids: HashMap<String, ItemId>,
    /// Whether some id is read from the runtime's memory (a dimension not constant).
    reads_memory: bool,
}

/// `body` without clang's lifetime markers and the casts made only for them: a variable's
/// slot now outlives each stretch its markers bounded (and the casts would count as its
/// address escaping).
fn without_lifetimes(body: Vec<String>) -> Vec<String> {
    let marked: HashSet<String> = body
        .iter()
        .filter(|l| l.contains("@llvm.lifetime."))
        .filter_map(|l| {
            let (_, last) = l.rsplit_once('%')?;
            let end = last
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
                .unwrap_or(last.len());
            Some(last[..end].to_owned())
        })
        .collect();
    let mut mentions: HashMap<&str, usize> = HashMap::new();
    for line in body.iter().filter(|l| !l.contains("@llvm.lifetime.")) {
        for name in values_named(line, "%") {
            *mentions.entry(name).or_default() += 1;
        }
    }
    let only_for_markers: HashSet<&String> = marked
        .iter()
        .filter(|m| mentions.get(m.as_str()) == Some(&1))
        .collect();
    body.iter()
        .filter(|l| !l.contains("@llvm.lifetime."))
        .filter(|l| {
            let defined = l
                .trim_start()
                .split_once(" = bitcast ")
                .map(|(name, _)| name);
            !defined
                .and_then(|name| name.strip_prefix('%'))
                .is_some_and(|name| only_for_markers.contains(&name.to_owned()))
        })
        .cloned()
        .collect()
}

/// The names of a header's parameters (`%v0`, ...).
fn params(header: &str) -> HashSet<String> {
    let Some((_, list)) = header.split_once('(') else {
        return HashSet::new();
    };
    let list = list.rsplit_once(')').map_or(list, |(l, _)| l);
    list.split(',')
        .filter_map(|p| p.split_whitespace().last())
        .filter(|p| p.starts_with('%'))
        .map(|p| p[1..].to_owned())
        .collect()
}

/// The variable an entry-block line allocates: `None` when the line is no alloca,
/// `Some(None)` when it is one this rewrite does not take (a count, an address space).
fn alloca(line: &str) -> Option<Option<Variable>> {
    let (name, rest) = line.trim_start().split_once(" = alloca ")?;
    let name = name.strip_prefix('%')?.to_owned();
    let Some((ty, align)) = rest.rsplit_once(", align ") else {
        return Some(None);
    };
    let mut depth = 0i32;
    for c in ty.chars() {
        match c {
            '{' | '[' | '<' | '(' => depth += 1,
            '}' | ']' | '>' | ')' => depth -= 1,
            ',' if depth == 0 => return Some(None),
            _ => {}
        }
    }
    if !align.bytes().all(|b| b.is_ascii_digit()) {
        return Some(None);
    }
    Some(Some(Variable {
        name,
        ty: ty.to_owned(),
        align: align.to_owned(),
        line: line.to_owned(),
    }))
}

/// The most work the liveness of a kernel's variables may take (variables times blocks and
/// edges) before the rewrite leaves the program to asyncify: a hostile program must not make
/// the build spin.
const MOST_LIVENESS_STEPS: usize = 50_000_000;

/// The most lines the stretches' copies of a kernel may take in all before the rewrite leaves
/// the program to asyncify: a stretch copies every block it reaches and starts each work-item
/// with a line per variable kept across barriers, so a hostile kernel of many barriers (in one
/// loop, or with many such variables) would otherwise make the build's text grow with their
/// product.
const MOST_COPIED_LINES: usize = 1_000_000;

/// The lines of a stretch's loop around its copy (its start, its next work-item).
const STRETCH_LOOP_LINES: usize = 72;

/// Which of `variables` need a slot per work-item: those whose address escapes, or that some
/// barrier's resumption may read before writing (a copy of a kernel argument, the same for
/// every work-item, needs none); `None` when finding out would take too long.
fn per_item_variables(
    variables: &[Variable],
    blocks: &[Block],
    graph: &[Vec<usize>],
    uses: &Uses<'_>,
    params: &HashSet<String>,
) -> Option<HashSet<String>> {
    let mut predecessors = vec![Vec::new(); blocks.len()];
    let mut edges = 0;
    for (block, next) in graph.iter().enumerate() {
        for &to in next {
            predecessors[to].push(block);
            edges += 1;
        }
    }
    if variables.len().saturating_mul(blocks.len() + edges) > MOST_LIVENESS_STEPS {
        return None;
    }
    let mut per_item = HashSet::new();
    for variable in variables {
        let name = variable.name.as_str();
        let used = uses.get(name).map_or(&[][..], Vec::as_slice);
        if used.iter().any(|(_, u, _)| *u == Use::Escapes) {
            per_item.insert(variable.name.clone());
            continue;
        }
        let argument_only = used
            .iter()
            .filter(|(_, u, _)| *u == Use::Store)
            .all(|(_, _, line)| {
                stored_value(line)
                    .and_then(|v| v.strip_prefix('%'))
                    .is_some_and(|v| params.contains(v))
            });
        if argument_only {
            continue;
        }
        let mut reads_first = vec![false; blocks.len()];
        let mut writes = vec![false; blocks.len()];
        for &(block, used, _) in used {
            match used {
                Use::Load => reads_first[block] |= !writes[block],
                Use::Store => writes[block] = true,
                Use::Escapes => {}
            }
        }
        // Backward: a block is live at its start when it reads first, or does not write and
        // a block after it is live.
        let mut live = reads_first.clone();
        let mut work: Vec<usize> = (0..blocks.len()).filter(|&b| live[b]).collect();
        while let Some(block) = work.pop() {
            for &before in &predecessors[block] {
                if !live[before] && !writes[before] {
                    live[before] = true;
                    work.push(before);
                }
            }
        }
        if blocks
            .iter()
            .zip(&live)
            .any(|(b, &l)| l && b.label.starts_with("__resume."))
        {
            per_item.insert(variable.name.clone());
        }
    }
    Some(per_item)
}

/// The variables among `slotted` that hold one work-item id wherever they are written (a
/// kernel's `size_t l = get_local_id(0);`), with it: each stretch computes the id again for
/// its work-item instead of keeping it in a slot.
fn recomputed_ids<'a>(
    variables: &'a [Variable],
    uses: &Uses<'_>,
    ids: &HashMap<String, ItemId>,
    slotted: &HashSet<String>,
) -> Vec<(&'a Variable, ItemId)> {
    let held = |variable: &Variable| {
        let mut held = None;
        for &(_, used, line) in uses.get(variable.name.as_str())? {
            match used {
                Use::Load => {}
                Use::Escapes => return None,
                Use::Store => {
                    let stored = stored_value(line)?.strip_prefix('%')?;
                    let id = *ids.get(stored)?;
                    if *held.get_or_insert(id) != id {
                        return None;
                    }
                }
            }
        }
        held
    };
    variables
        .iter()
        .filter(|v| v.ty == "i32" && slotted.contains(&v.name))
        .filter_map(|v| Some((v, held(v)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clang's unoptimized IR (as the build emits it) of a kernel that keeps its local id
    /// (`%7`) across barriers, halves a stride (`%8`) in a loop around one, and counts with
    /// a variable (`%9`) that each stretch writes before reading.
    const STRIDES: &str = "\
define hidden spir_kernel void @strides(i32* noundef %0, i32 noundef %1) #0 {
  %3 = alloca i32*, align 4
  %4 = alloca i32, align 4
  %5 = alloca [4 x i32], align 16
  %6 = alloca i32, align 4
  %7 = alloca i32, align 4
  %8 = alloca i32, align 4
  %9 = alloca i32, align 4
  store i32* %0, i32** %3, align 4, !tbaa !7
  store i32 %1, i32* %4, align 4, !tbaa !7
  %10 = bitcast i32* %7 to i8*
  call void @llvm.lifetime.start.p0i8(i64 4, i8* %10) #5
  %11 = call i32 @_Z12get_local_idj(i32 noundef 0) #6
  store i32 %11, i32* %7, align 4, !tbaa !11
  %12 = getelementptr inbounds [4 x i32], [4 x i32]* %5, i32 0, i32 0
  store i32 %11, i32* %12, align 16
  call void @_Z7barrierj(i32 noundef 1) #7
  store i32 %1, i32* %8, align 4, !tbaa !11
  br label %13

13:                                               ; preds = %16, %2
  %14 = load i32, i32* %8, align 4, !tbaa !11
  %15 = icmp ugt i32 %14, 0
  br i1 %15, label %16, label %20

16:                                               ; preds = %13
  store i32 0, i32* %9, align 4
  %17 = load i32, i32* %9, align 4
  call void @_Z7barrierj(i32 noundef 1) #7
  %18 = load i32, i32* %8, align 4, !tbaa !11
  %19 = lshr i32 %18, 1
  store i32 %19, i32* %8, align 4, !tbaa !11
  br label %13

20:                                               ; preds = %13
  %21 = load i32, i32* %7, align 4, !tbaa !11
  %22 = load i32*, i32** %3, align 4, !tbaa !7
  %23 = getelementptr inbounds i32, i32* %22, i32 %21
  store i32 %21, i32* %23, align 4
  ret void
}

define hidden i32 @helper(i32 noundef %0) #1 {
  %2 = call i32 @_Z13get_global_idj(i32 noundef 0) #6
  ret i32 %2
}

declare void @_Z7barrierj(i32 noundef) #2
declare i32 @_Z12get_local_idj(i32 noundef) #3
declare i32 @_Z13get_global_idj(i32 noundef) #3
attributes #0 = { convergent norecurse nounwind }
";

    fn kernel_of(text: &str) -> &str {
        let start = text.find("define hidden spir_kernel").unwrap();
        &text[start..start + text[start..].find("\n}").unwrap()]
    }

    #[test]
    fn a_kernel_meeting_at_barriers_runs_its_group_with_slots_for_what_crosses_them() {
        let (text, grouped) = rewrite(STRIDES, &["strides"]).expect("rewritten");
        assert_eq!(grouped, ["strides"]);
        let kernel = kernel_of(&text);
        assert!(
            kernel.contains("%__all.v5 = alloca"),
            "the array whose address goes elsewhere gets a slot per work-item:\n{kernel}"
        );
        // The stride is the same in every work-item: the stretches pass it on instead.
        assert!(!kernel.contains("__all.v8"), "{kernel}");
        for kept in [
            "%__in.v8 = alloca i32, align 4",
            "%__out.v8 = alloca i32, align 4",
        ] {
            assert!(kernel.contains(kept), "{kernel}");
        }
        for own in ["v3", "v4", "v9"] {
            assert!(
                kernel.contains(&format!("%{own} = alloca"))
                    && !kernel.contains(&format!("__all.{own}")),
                "{own} (an argument's copy, or written before read) stays one variable:\n{kernel}"
            );
        }
        assert!(!kernel.contains("@_Z7barrierj("), "{kernel}");
        assert!(!kernel.contains("llvm.lifetime"), "{kernel}");
        assert!(!kernel.contains("@_Z12get_local_idj("), "{kernel}");
        assert!(!kernel.contains("@__accelhost_local_id("), "{kernel}");
        // The kernel's id comes from its stretch's loop; the variable holding it (v7) gets
        // no slot but is computed again for each work-item of each stretch.
        assert!(
            kernel.contains("%v11.__s0 = add i32 %__x.__s0, 0\n"),
            "{kernel}"
        );
        assert!(!kernel.contains("__all.v7"), "{kernel}");
        assert!(
            kernel.contains(
                "  %__id.v7.__s2 = add i32 %__x.__s2, 0\n  store i32 %__id.v7.__s2, i32* %v7, align 4\n"
            ),
            "{kernel}"
        );
        // A loop for each stretch, and the group goes on with the stretch of its first
        // work-item not at its end.
        for stretch in 0..=2 {
            assert!(kernel.contains(&format!("__loop.{stretch}:")), "{kernel}");
        }
        assert!(
            kernel.contains("i32 1, label %__loop.1") && kernel.contains("i32 2, label %__loop.2"),
            "{kernel}"
        );
        // Helpers may be inlined into the kernel: they read the work-item from memory, which
        // each stretch's loop therefore writes.
        assert!(text.contains("call i32 @__accelhost_global_id(i32 noundef 0)\n"));
        assert!(
            kernel.contains(
                "call void @__accelhost_set_item(i32 %__x.__s1, i32 %__y.__s1, i32 %__z.__s1)"
            ),
            "{kernel}"
        );
        assert!(text.ends_with(DECLARATIONS));
    }

    #[test]
    fn each_stretch_runs_its_own_copy_of_the_blocks_it_reaches() {
        let (text, _) = rewrite(STRIDES, &["strides"]).unwrap();
        let kernel = kernel_of(&text);
        // From the start: the first barrier's block only.
        assert!(kernel.contains("__start.__s0:"), "{kernel}");
        assert!(!kernel.contains("v13.__s0:"), "{kernel}");
        // After the first barrier: the loop's test and body; after the second, the halving,
        // and both reach the end.
        for stretch in [1, 2] {
            for block in ["v13", "v16", "v20"] {
                assert!(
                    kernel.contains(&format!("{block}.__s{stretch}:")),
                    "{block} in stretch {stretch}:\n{kernel}"
                );
            }
        }
        // A copy's values are its own; what every work-item shares is not copied.
        assert!(
            kernel.contains("%v14.__s1 = load i32, i32* %v8,"),
            "{kernel}"
        );
        assert!(
            kernel.contains("%v14.__s2 = load i32, i32* %v8,"),
            "{kernel}"
        );
        // So are its slots, for a stride that differs between work-items.
        let varying = STRIDES.replace(
            "  store i32 %1, i32* %8, align 4, !tbaa !11\n",
            "  %40 = call i32 @_Z12get_local_idj(i32 noundef 0) #6\n  \
             store i32 %40, i32* %8, align 4, !tbaa !11\n",
        );
        let (varying, _) = rewrite(&varying, &["strides"]).unwrap();
        let varying = kernel_of(&varying);
        for stretch in [1, 2] {
            assert!(
                varying.contains(&format!(
                    "%v14.__s{stretch} = load i32, i32* %v8.__s{stretch}"
                )),
                "{varying}"
            );
        }
        assert!(
            varying
                .contains("%v8.__s2 = getelementptr inbounds i32, i32* %__all.v8, i32 %__wi.__s2"),
            "{varying}"
        );
        assert!(
            kernel.contains("%v22.__s1 = load i32*, i32** %v3,"),
            "{kernel}"
        );
        assert!(
            kernel.contains("v16.__s1:\n  store i32 0, i32* %v9, align 4\n  %v17.__s1 = load i32, i32* %v9, align 4\n  store i32 2, i32* %__stop.addr"),
            "{kernel}"
        );
        assert!(
            kernel.contains("store i32 -1, i32* %__stop.addr, align 4\n  br label %__stopped.__s2"),
            "{kernel}"
        );
    }

    #[test]
    fn a_kernel_whose_copies_would_grow_past_the_bound_is_left_to_asyncify() {
        // Many barriers, each stretch after one reaching a long tail of code.
        let barriers = 200;
        let tail = MOST_COPIED_LINES / barriers + 1;
        let mut body = String::new();
        for k in 0..barriers {
            let _ = write!(
                body,
                "  call void @_Z7barrierj(i32 noundef 1) #7\n  \
                 br i1 false, label %11, label %n{k}\n\nn{k}:\n"
            );
        }
        body.push_str("  br label %11\n\n11:\n");
        for _ in 0..tail {
            body.push_str("  store i32 0, i32* %3, align 4\n");
        }
        let kernel = format!(
            "define hidden spir_kernel void @many(i32* noundef %0) #0 {{\n  \
             %3 = alloca i32, align 4\n{body}  ret void\n}}\n\
             declare void @_Z7barrierj(i32 noundef) #2\n"
        );
        assert!(rewrite(&kernel, &["many"]).is_none());
        let short = kernel.replacen(
            &"  store i32 0, i32* %3, align 4\n".repeat(tail - 10),
            "",
            1,
        );
        assert!(
            rewrite(&short, &["many"]).is_some(),
            "a short tail is split"
        );
    }

    #[test]
    fn a_kernel_whose_slots_times_barriers_pass_the_bound_is_left_to_asyncify() {
        // Every variable lives across every barrier: each stretch names each one's slot, or
        // passes on the one value a variable the same in every work-item holds.
        let kernel = |variables: usize, barriers: usize, uniform: bool| {
            let mut text =
                String::from("define hidden spir_kernel void @kept(i32* noundef %0) #0 {\n");
            for v in 0..variables {
                let _ = writeln!(text, "  %k{v} = alloca i32, align 4");
            }
            for v in 0..variables {
                if uniform {
                    let _ = writeln!(text, "  store i32 {v}, i32* %k{v}, align 4");
                } else {
                    let _ = writeln!(text, "  %s{v} = load i32, i32* %0, align 4");
                    let _ = writeln!(text, "  store i32 %s{v}, i32* %k{v}, align 4");
                }
            }
            for _ in 0..barriers {
                text.push_str("  call void @_Z7barrierj(i32 noundef 1) #7\n");
            }
            for v in 0..variables {
                let _ = writeln!(text, "  %l{v} = load i32, i32* %k{v}, align 4");
                let _ = writeln!(text, "  store i32 %l{v}, i32* %0, align 4");
            }
            text.push_str("  ret void\n}\ndeclare void @_Z7barrierj(i32 noundef) #2\n");
            text
        };
        let many = (MOST_COPIED_LINES / 1000) + 1;
        for uniform in [false, true] {
            assert!(rewrite(&kernel(many, 1000, uniform), &["kept"]).is_none());
        }
        let (few, _) = rewrite(&kernel(10, 1000, false), &["kept"]).expect("a few variables split");
        assert!(
            few.contains("%__all.k9 = alloca"),
            "the variables get slots"
        );
        let (few, _) = rewrite(&kernel(10, 1000, true), &["kept"]).expect("a few variables split");
        assert!(
            few.contains("%__in.k9 = alloca"),
            "the variables are passed on"
        );
    }

    #[test]
    fn a_variable_written_where_only_some_work_items_go_keeps_a_slot() {
        let guarded = STRIDES.replace(
            "  store i32 %19, i32* %8, align 4, !tbaa !11\n  br label %13\n",
            "  %41 = call i32 @_Z12get_local_idj(i32 noundef 0) #6\n  \
             %42 = icmp ult i32 %41, 2\n  br i1 %42, label %43, label %13\n\n\
             43:\n  store i32 %19, i32* %8, align 4, !tbaa !11\n  br label %13\n",
        );
        let (text, _) = rewrite(&guarded, &["strides"]).unwrap();
        let kernel = kernel_of(&text);
        assert!(kernel.contains("%__all.v8 = alloca"), "{kernel}");
        assert!(!kernel.contains("__in.v8"), "{kernel}");
        // Written on both sides of the branch, where the paths meet again: the same in all.
        let after = STRIDES.replace(
            "  %19 = lshr i32 %18, 1\n",
            "  %19 = lshr i32 %18, 1\n  \
             %41 = call i32 @_Z12get_local_idj(i32 noundef 0) #6\n  \
             %42 = icmp ult i32 %41, 2\n  br i1 %42, label %43, label %44\n\n\
             43:\n  br label %44\n\n44:\n",
        );
        let (text, _) = rewrite(&after, &["strides"]).unwrap();
        assert!(kernel_of(&text).contains("%__in.v8 = alloca"), "{text}");
    }

    #[test]
    fn work_items_that_all_stop_at_one_place_keep_it_once() {
        let (text, _) = rewrite(STRIDES, &["strides"]).unwrap();
        let kernel = kernel_of(&text);
        for stretch in 0..=2 {
            assert!(
                kernel.contains(&format!(
                    "__kept.__s{stretch}:\n  store i32 %__stop.__s{stretch}, i32* %__common.addr"
                )),
                "{kernel}"
            );
        }
        assert!(!kernel.contains("__record"), "{kernel}");
        // Some work-items end before the first barrier: each one's stop is its own.
        let early = STRIDES.replace(
            "  %12 = getelementptr",
            "  %30 = icmp ugt i32 %11, 3\n  br i1 %30, label %31, label %32\n\n\
             31:\n  ret void\n\n32:\n  %12 = getelementptr",
        );
        let (text, _) = rewrite(&early, &["strides"]).unwrap();
        let kernel = kernel_of(&text);
        assert!(
            kernel.contains("__record.__s0:") && kernel.contains("@__accelhost_stops_apart("),
            "{kernel}"
        );
        assert!(!kernel.contains("__kept.__s0:"), "{kernel}");
        assert!(
            kernel.contains("__kept.__s1:") && kernel.contains("@__accelhost_stops_moved("),
            "after the barrier they stop together again:\n{kernel}"
        );
    }

    #[test]
    fn a_stretch_loop_takes_at_most_the_lines_the_bound_counts() {
        // No variables and a stop of each work-item's own: the most a loop writes around the
        // blocks it copies.
        let kernel = "define hidden spir_kernel void @apart(i32* noundef %0) #0 {\n  \
             %2 = call i32 @_Z12get_local_idj(i32 noundef 0) #6\n  \
             %3 = icmp ugt i32 %2, 3\n  br i1 %3, label %4, label %5\n\n\
             4:\n  ret void\n\n5:\n  call void @_Z7barrierj(i32 noundef 1) #7\n  ret void\n}\n\
             declare void @_Z7barrierj(i32 noundef) #2\n\
             declare i32 @_Z12get_local_idj(i32 noundef) #3\n";
        let (text, _) = rewrite(kernel, &["apart"]).unwrap();
        let first = text.find("__loop.0:").unwrap();
        let second = text.find("__loop.1:").unwrap();
        let sections = [
            &text[first..second],
            &text[second..text.find("__scan:").unwrap()],
        ];
        assert!(sections[0].contains("__record.__s0:"), "{}", sections[0]);
        assert!(sections[1].contains("__check.__s1:"), "{}", sections[1]);
        for section in sections {
            let mut own = 0;
            let mut copied = false;
            for line in section.lines() {
                if let Some((label, _)) = line.split_once(':')
                    && !line.starts_with(' ')
                {
                    copied = !label.starts_with("__")
                        || label.starts_with("__start")
                        || label.starts_with("__resume.");
                }
                own += usize::from(!copied);
            }
            assert!(
                own <= STRETCH_LOOP_LINES,
                "{own} lines around the copy, more than {STRETCH_LOOP_LINES}:\n{section}"
            );
        }
    }

    #[test]
    fn suffixes_go_on_whole_names_only() {
        let names: HashSet<&str> = ["v1", "v2"].into_iter().collect();
        assert_eq!(
            suffixed("  %v1 = add i32 %v12, %v2\n  br label %v1", &names, ".__s3"),
            "  %v1.__s3 = add i32 %v12, %v2.__s3\n  br label %v1.__s3"
        );
    }

    #[test]
    fn what_the_rewrite_cannot_follow_is_left_to_asyncify() {
        assert!(
            rewrite(STRIDES, &[]).is_none(),
            "a barrier outside the kernels named"
        );
        let no_barrier = STRIDES.replace("  call void @_Z7barrierj(i32 noundef 1) #7\n", "");
        assert!(
            rewrite(&no_barrier, &["strides"]).is_none(),
            "nothing to split"
        );
        let called = STRIDES.replace(
            "  %2 = call i32",
            "  call void @strides(i32* null, i32 0)\n  %2 = call i32",
        );
        assert!(
            rewrite(&called, &["strides"]).is_none(),
            "a kernel called as a function"
        );
        let phi = STRIDES.replace(
            "  %21 = load i32, i32* %7, align 4, !tbaa !11",
            "  %21 = phi i32 [ 0, %13 ]",
        );
        assert!(rewrite(&phi, &["strides"]).is_none(), "a phi");
        let counted = STRIDES.replace(
            "%9 = alloca i32, align 4",
            "%9 = alloca i32, i32 %1, align 4",
        );
        assert!(
            rewrite(&counted, &["strides"]).is_none(),
            "an alloca of a count"
        );
        let returning = STRIDES.replace("  ret void", "  ret i32 0");
        assert!(
            rewrite(&returning, &["strides"]).is_none(),
            "a kernel returning a value"
        );
    }

    #[test]
    fn ids_reach_memory_only_when_something_reads_them_there() {
        let without_helper = STRIDES.replace("@_Z13get_global_idj(i32 noundef 0) #6", "@seven()");
        let (text, _) = rewrite(&without_helper, &["strides"]).unwrap();
        assert!(
            !kernel_of(&text).contains("@__accelhost_set_item("),
            "{text}"
        );
        let varying = without_helper.replace(
            "@_Z12get_local_idj(i32 noundef 0)",
            "@_Z12get_local_idj(i32 noundef %1)",
        );
        let (text, _) = rewrite(&varying, &["strides"]).unwrap();
        let kernel = kernel_of(&text);
        assert!(
            kernel.contains("%v11.__s0 = call i32 @__accelhost_local_id(i32 noundef %v1)"),
            "a dimension not constant is read from memory:\n{kernel}"
        );
        assert!(kernel.contains("@__accelhost_set_item("), "{kernel}");
        assert!(
            kernel.contains("%__all.v7 = alloca"),
            "what it read is kept:\n{kernel}"
        );
    }

    #[test]
    fn a_variable_given_two_ids_or_other_values_keeps_a_slot() {
        let global = STRIDES.replace(
            "  store i32 %1, i32* %8, align 4, !tbaa !11\n",
            "  store i32 %1, i32* %8, align 4, !tbaa !11\n  \
             %40 = call i32 @_Z13get_global_idj(i32 noundef 0) #6\n  \
             store i32 %40, i32* %7, align 4\n",
        );
        let (text, _) = rewrite(&global, &["strides"]).unwrap();
        assert!(kernel_of(&text).contains("%__all.v7 = alloca"), "{text}");
        let other = STRIDES.replace(
            "  store i32 %1, i32* %8, align 4, !tbaa !11\n",
            "  store i32 %1, i32* %8, align 4, !tbaa !11\n  store i32 %1, i32* %7, align 4\n",
        );
        let (text, _) = rewrite(&other, &["strides"]).unwrap();
        assert!(kernel_of(&text).contains("%__all.v7 = alloca"), "{text}");
        let (text, _) = rewrite(STRIDES, &["strides"]).unwrap();
        assert!(!kernel_of(&text).contains("%__all.v7 = alloca"), "{text}");
    }

    #[test]
    fn a_variable_whose_address_goes_elsewhere_gets_a_slot() {
        let escapes = STRIDES.replace(
            "  store i32 0, i32* %9, align 4\n",
            "  store i32 0, i32* %9, align 4\n  call void @keep(i32* %9)\n",
        );
        let (text, _) = rewrite(&escapes, &["strides"]).unwrap();
        assert!(kernel_of(&text).contains("%__all.v9 = alloca"), "{text}");
    }
}
