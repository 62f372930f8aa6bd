//! Which of a kernel's variables hold the same value in every work-item of a work-group at
//! each barrier (a stride halved around a barrier, a bound read from `get_local_size`): such
//! a variable needs no slot per work-item. OpenCL has every work-item of a group meet at the
//! same barriers, so each stretch's work-items may start from the one value the stretch
//! began with and leave the one value they stop with.
//!
//! A value is uniform when it is a constant, a kernel argument, the answer of a work-group
//! function ([`UNIFORM_CALLS`]) to uniform arguments, a load of a uniform variable, or an
//! instruction without effects ([`PURE`]) of uniform operands. A variable whose address goes
//! nowhere else is uniform when every store to it stores a uniform value in a block that no
//! branch on a value that is not uniform leads to (the whole group runs it, or none of it).
//! The answer is the largest set that holds (a variable halved from itself is uniform), found
//! by taking away, from all, what depends on something that is not uniform: each fact is
//! taken away once, so the work grows with the kernel's text, whatever a program holds.

use std::collections::{HashMap, HashSet};

use super::ir::{Block, Use, Uses, Variable, stored_value, values_named};

/// OpenCL's work-group functions whose answers are the same for every work-item of a group,
/// as their overloads mangle: sizes, the group's ids, the range's offset and dimensions.
const UNIFORM_CALLS: [&str; 7] = [
    "@_Z14get_local_sizej(",
    "@_Z12get_group_idj(",
    "@_Z14get_num_groupsj(",
    "@_Z15get_global_sizej(",
    "@_Z17get_global_offsetj(",
    "@_Z12get_work_dimv(",
    "@_Z23get_enqueued_local_sizej(",
];

/// The instructions whose result depends only on their operands.
const PURE: [&str; 39] = [
    "add",
    "sub",
    "mul",
    "udiv",
    "sdiv",
    "urem",
    "srem",
    "shl",
    "lshr",
    "ashr",
    "and",
    "or",
    "xor",
    "fadd",
    "fsub",
    "fmul",
    "fdiv",
    "frem",
    "fneg",
    "icmp",
    "fcmp",
    "zext",
    "sext",
    "trunc",
    "bitcast",
    "sitofp",
    "uitofp",
    "fptosi",
    "fptoui",
    "fpext",
    "fptrunc",
    "ptrtoint",
    "inttoptr",
    "select",
    "getelementptr",
    "extractelement",
    "insertelement",
    "shufflevector",
    "freeze",
];

/// What may stop being uniform: a value or variable (by name); the blocks a branch in block
/// `Branch(b)` chooses between, up to where its paths meet again; or a block (by index), which
/// then runs in some work-items and not others.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Fact<'a> {
    Value(&'a str),
    Branch(usize),
    Block(usize),
}

/// What is the same in every work-item of a group: its variables (by name) and, by block
/// index, whether the whole group runs the block or none of it.
pub(super) struct Uniformity {
    pub variables: HashSet<String>,
    pub together: Vec<bool>,
}

impl Uniformity {
    /// Nothing is known to be uniform.
    fn none(blocks: usize) -> Uniformity {
        Uniformity {
            variables: HashSet::new(),
            together: vec![false; blocks],
        }
    }
}

/// What is uniform in `blocks` (the kernel's code cut at its barriers), whose graph is
/// `successors` and of which those marked in `stops` stop a work-item; the variables'
/// `uses` are given, `params` are the kernel's arguments. Past `most_steps` of work, nothing
/// is.
pub(super) fn uniformity<'a>(
    variables: &'a [Variable],
    blocks: &'a [Block],
    successors: &[Vec<usize>],
    stops: &[bool],
    uses: &Uses<'a>,
    params: &HashSet<String>,
    most_steps: usize,
) -> Uniformity {
    let Some(meets) = immediate_post_dominators(successors, stops, most_steps) else {
        return Uniformity::none(blocks.len());
    };
    let variable_names: HashSet<&str> = variables.iter().map(|v| v.name.as_str()).collect();
    let defined: HashSet<&str> = blocks
        .iter()
        .flat_map(|b| &b.lines)
        .filter_map(|l| defined_name(l))
        .collect();
    let known = |name: &str| {
        params.contains(name) || variable_names.contains(name) || defined.contains(name)
    };
    // What stops being uniform when a fact does, and what is not uniform from the start.
    let mut dependents: HashMap<Fact<'a>, Vec<Fact<'a>>> = HashMap::new();
    let mut not_uniform: Vec<Fact<'a>> = Vec::new();
    let depend = |on: &'a str,
                  fact: Fact<'a>,
                  dependents: &mut HashMap<Fact<'a>, Vec<Fact<'a>>>,
                  not_uniform: &mut Vec<Fact<'a>>| {
        if !known(on) {
            not_uniform.push(fact);
        } else if !params.contains(on) {
            dependents.entry(Fact::Value(on)).or_default().push(fact);
        }
    };
    for (at, block) in blocks.iter().enumerate() {
        for line in &block.lines {
            let code = line.trim_start();
            if let Some(name) = defined_name(line) {
                let fact = Fact::Value(name);
                let (_, instruction) = code.split_once(" = ").unwrap_or_default();
                let opcode = instruction.split_whitespace().next().unwrap_or_default();
                let allowed = PURE.contains(&opcode)
                    || (opcode == "load"
                        && loaded_variable(instruction, &variable_names).is_some())
                    || (opcode == "call" || opcode == "tail")
                        && UNIFORM_CALLS.iter().any(|c| instruction.contains(c));
                if !allowed {
                    not_uniform.push(fact);
                    continue;
                }
                for operand in values_named(instruction, "%") {
                    depend(operand, fact, &mut dependents, &mut not_uniform);
                }
            } else if let Some(condition) = branch_condition(code) {
                depend(
                    condition,
                    Fact::Branch(at),
                    &mut dependents,
                    &mut not_uniform,
                );
            }
        }
    }
    for variable in variables {
        let name = variable.name.as_str();
        let fact = Fact::Value(name);
        for &(block, used, line) in uses.get(name).map_or(&[][..], Vec::as_slice) {
            match used {
                Use::Load => {}
                Use::Escapes => not_uniform.push(fact),
                Use::Store => {
                    dependents.entry(Fact::Block(block)).or_default().push(fact);
                    if let Some(value) = stored_value(line).and_then(|v| v.strip_prefix('%')) {
                        depend(value, fact, &mut dependents, &mut not_uniform);
                    }
                }
            }
        }
    }
    let mut taken: HashSet<Fact> = HashSet::new();
    let mut steps = 0usize;
    while let Some(fact) = not_uniform.pop() {
        if !taken.insert(fact) {
            continue;
        }
        if let Some(next) = dependents.get(&fact) {
            not_uniform.extend(next.iter().copied());
        }
        if let Fact::Branch(branch) = fact {
            // The blocks some work-items run and others not: those the branch leads to
            // before its paths meet again (all it leads to, when they never do).
            let mut work = successors[branch].clone();
            let mut seen = HashSet::new();
            while let Some(block) = work.pop() {
                steps += 1;
                if steps > most_steps {
                    return Uniformity::none(blocks.len());
                }
                if Some(block) == meets[branch] || !seen.insert(block) {
                    continue;
                }
                not_uniform.push(Fact::Block(block));
                work.extend(&successors[block]);
            }
        }
    }
    Uniformity {
        variables: variables
            .iter()
            .filter(|v| !taken.contains(&Fact::Value(&v.name)))
            .map(|v| v.name.clone())
            .collect(),
        together: (0..blocks.len())
            .map(|b| !taken.contains(&Fact::Block(b)))
            .collect(),
    }
}

/// Each block's nearest post-dominator among the blocks (where all its paths to a stop meet
/// again): `None` for a block whose paths meet only at the stop, or never reach one; `None`
/// in all past `most_steps` of work. Cooper, Harvey and Kennedy's iteration over the
/// reversed graph, whose root is a stop after every stopping block.
fn immediate_post_dominators(
    successors: &[Vec<usize>],
    stops: &[bool],
    most_steps: usize,
) -> Option<Vec<Option<usize>>> {
    let exit = successors.len();
    let mut predecessors = vec![Vec::new(); exit + 1];
    for (block, next) in successors.iter().enumerate() {
        for &n in next {
            predecessors[n].push(block);
        }
        if stops[block] {
            predecessors[exit].push(block);
        }
    }
    // Postorder of the reversed graph from the exit, without recursion.
    let mut order = vec![usize::MAX; exit + 1];
    let mut postorder = Vec::with_capacity(exit + 1);
    let mut visited = vec![false; exit + 1];
    let mut stack = vec![(exit, 0usize)];
    visited[exit] = true;
    while let Some((node, child)) = stack.pop() {
        if let Some(&next) = predecessors[node].get(child) {
            stack.push((node, child + 1));
            if !visited[next] {
                visited[next] = true;
                stack.push((next, 0));
            }
        } else {
            order[node] = postorder.len();
            postorder.push(node);
        }
    }
    let mut dominator = vec![usize::MAX; exit + 1];
    dominator[exit] = exit;
    let mut steps = 0usize;
    let mut changed = true;
    while changed {
        changed = false;
        for &node in postorder.iter().rev().skip(1) {
            steps += 1;
            if steps > most_steps {
                return None;
            }
            let mut new = usize::MAX;
            let following = successors[node]
                .iter()
                .copied()
                .chain(stops[node].then_some(exit));
            for next in following {
                if dominator[next] == usize::MAX {
                    continue;
                }
                if new == usize::MAX {
                    new = next;
                    continue;
                }
                let (mut a, mut b) = (next, new);
                while a != b {
                    steps += 1;
                    if steps > most_steps {
                        return None;
                    }
                    if order[a] < order[b] {
                        a = dominator[a];
                    } else {
                        b = dominator[b];
                    }
                }
                new = a;
            }
            if dominator[node] != new {
                dominator[node] = new;
                changed = true;
            }
        }
    }
    Some(
        dominator[..exit]
            .iter()
            .map(|&d| (d != usize::MAX && d != exit).then_some(d))
            .collect(),
    )
}

/// The value a conditional branch or a switch (`code`) chooses by, when it is no constant.
fn branch_condition(code: &str) -> Option<&str> {
    let chosen_by = if let Some(rest) = code.strip_prefix("br i1 ") {
        rest.split(',').next()?
    } else {
        code.strip_prefix("switch ")?
            .split(',')
            .next()?
            .split_whitespace()
            .last()?
    };
    chosen_by.trim().strip_prefix('%')
}

/// The name a line defines (`%v3 = ...`).
fn defined_name(line: &str) -> Option<&str> {
    let (defined, _) = line.trim_start().split_once(" = ")?;
    defined.strip_prefix('%')
}

/// The variable a `load` instruction (after `= `) reads, when it reads one of `variables`.
fn loaded_variable<'a>(instruction: &'a str, variables: &HashSet<&str>) -> Option<&'a str> {
    let (_, pointer) = instruction.split_once(", ")?;
    let name = values_named(pointer, "%").next()?;
    variables.contains(name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_meet_after_a_diamond_and_a_loop_and_never_out_of_an_endless_loop() {
        // 0 -> 1 | 2 -> 3 (stops); 4 -> 5 -> 4 | 6 (stops); 7 <-> 8, which never stop.
        let successors = vec![
            vec![1, 2],
            vec![3],
            vec![3],
            vec![],
            vec![5],
            vec![4, 6],
            vec![],
            vec![8],
            vec![7],
        ];
        let stops = [false, false, false, true, false, false, true, false, false];
        let meets = immediate_post_dominators(&successors, &stops, 1_000).unwrap();
        assert_eq!(meets[0], Some(3));
        assert_eq!(meets[1], Some(3));
        assert_eq!(meets[3], None, "a stop's paths meet only at the end");
        assert_eq!(meets[4], Some(5));
        assert_eq!(meets[5], Some(6));
        assert_eq!((meets[7], meets[8]), (None, None));
        assert!(
            immediate_post_dominators(&successors, &stops, 2).is_none(),
            "the work is bounded"
        );
    }

    #[test]
    fn conditions_are_read_from_branches_and_switches_not_constants() {
        assert_eq!(
            branch_condition("br i1 %v4, label %v5, label %v6"),
            Some("v4")
        );
        assert_eq!(branch_condition("br i1 false, label %v5, label %v6"), None);
        assert_eq!(branch_condition("switch i32 %v9, label %v3 ["), Some("v9"));
        assert_eq!(branch_condition("br label %v5"), None);
    }
}
