//! Components crafted to attack or fool the compile of a plugin, built with wasm-encoder: one
//! whose single function keeps Cranelift busy for minutes, one of 200,000 tiny functions that
//! takes a compile past a gigabyte, one that does not validate, and ones that compile but are
//! no plugin. None of them is a plugin: each is a component around a core module that is
//! compiled but never instantiated.

#![allow(dead_code)]

use wasm_encoder::{
    Alias, BlockType, CanonicalFunctionSection, CodeSection, Component, ComponentAliasSection,
    ComponentExportKind, ComponentExportSection, ComponentTypeSection, ExportKind, ExportSection,
    Function, FunctionSection, InstanceSection, Instruction, Module, ModuleArg, ModuleSection,
    PrimitiveValType, TypeSection, ValType,
};

/// A core module of `bodies.len()` functions of type `() -> ()`, exporting the first as `f`
/// when `export` says so.
fn module(bodies: &[Function], export: bool) -> Module {
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([], []);
    module.section(&types);
    let mut functions = FunctionSection::new();
    for _ in bodies {
        functions.function(0);
    }
    module.section(&functions);
    if export {
        let mut exports = ExportSection::new();
        exports.export("f", ExportKind::Func, 0);
        module.section(&exports);
    }
    let mut code = CodeSection::new();
    for body in bodies {
        code.function(body);
    }
    module.section(&code);
    module
}

/// A component holding `module` and nothing else.
fn holding(module: &Module) -> Vec<u8> {
    let mut component = Component::new();
    component.section(&ModuleSection(module));
    component.finish()
}

/// One function of about 5 MiB: 1,000 locals and 300,000 blocks, each adding two locals
/// into a third and branching on one. Cranelift's SSA construction and register allocation
/// work on it for minutes (more than 100 s here) while its memory climbs past a gigabyte.
pub fn one_huge_function() -> Vec<u8> {
    const LOCALS: u32 = 1000;
    const BLOCKS: u32 = 300_000;
    let mut body = Function::new([(LOCALS, ValType::I32)]);
    for i in 0..BLOCKS {
        let (a, b, c) = (i % LOCALS, (i * 7 + 3) % LOCALS, (i * 13 + 5) % LOCALS);
        body.instruction(&Instruction::Block(BlockType::Empty))
            .instruction(&Instruction::LocalGet(a))
            .instruction(&Instruction::LocalGet(b))
            .instruction(&Instruction::I32Add)
            .instruction(&Instruction::LocalSet(c))
            .instruction(&Instruction::LocalGet(b))
            .instruction(&Instruction::BrIf(0))
            .instruction(&Instruction::End);
    }
    body.instruction(&Instruction::End);
    holding(&module(&[body], false))
}

/// `count` functions that do nothing: 200,000 of them take a compile to about 1.1 GiB.
pub fn tiny_functions(count: usize) -> Vec<u8> {
    let mut body = Function::new([]);
    body.instruction(&Instruction::End);
    holding(&module(&vec![body; count], false))
}

/// A component whose only function adds to an empty stack: it does not validate.
pub fn invalid() -> Vec<u8> {
    let mut body = Function::new([]);
    body.instruction(&Instruction::I32Add)
        .instruction(&Instruction::End);
    holding(&module(&[body], false))
}

/// A component that compiles and exports `f: func()`, but nothing of `accel:plugin`.
pub fn exporting_something_else() -> Vec<u8> {
    let mut body = Function::new([]);
    body.instruction(&Instruction::End);
    let core = module(&[body], true);
    let mut component = Component::new();
    component.section(&ModuleSection(&core));
    let mut instances = InstanceSection::new();
    instances.instantiate(0, std::iter::empty::<(&str, ModuleArg)>());
    component.section(&instances);
    let mut aliases = ComponentAliasSection::new();
    aliases.alias(Alias::CoreInstanceExport {
        instance: 0,
        kind: ExportKind::Func,
        name: "f",
    });
    component.section(&aliases);
    let mut types = ComponentTypeSection::new();
    types
        .function()
        .params(std::iter::empty::<(&str, PrimitiveValType)>())
        .result(None);
    component.section(&types);
    let mut canon = CanonicalFunctionSection::new();
    canon.lift(0, 0, []);
    component.section(&canon);
    let mut exports = ComponentExportSection::new();
    exports.export("f", ComponentExportKind::Func, 0, None);
    component.section(&exports);
    component.finish()
}

/// `wasm` (a component) with a custom section named `tag` at its end: the same component
/// under another digest, so that nothing remembered of the untagged one applies to it.
pub fn tagged(mut wasm: Vec<u8>, tag: &str) -> Vec<u8> {
    assert!(tag.len() < 64, "a short tag");
    wasm.extend_from_slice(&[0, tag.len() as u8 + 1, tag.len() as u8]);
    wasm.extend_from_slice(tag.as_bytes());
    wasm
}
