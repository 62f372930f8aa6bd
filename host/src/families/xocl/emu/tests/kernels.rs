//! The xclbin's own kernels on the emulated card: kernels built here as raw modules
//! (wasm-encoder), so that each test says exactly what the kernel does.

use wasm_encoder::{
    BlockType, CodeSection, ConstExpr, EntityType, ExportKind, ExportSection, Function,
    FunctionSection, GlobalSection, GlobalType, ImportSection, Instruction as I, MemArg,
    MemoryType as WasmMemory, Module, TypeSection, ValType as W,
};

use super::*;
use crate::families::xocl::card::XoclCard;
use crate::families::xocl::emu::kernels::{KEEP_AT_MOST, KEPT_INSTANCES};
use crate::families::xocl::xclbin::{MemKind, VADD_BANK_BASE, VADD_BANK_SIZE};
use crate::family::CardSettings;

const KUUID: Guid = Guid::new(0x4b45, 0x524e);

/// A kernel: its name, parameters and body (locals after the parameters: one i32).
struct Kernel {
    name: &'static str,
    params: Vec<W>,
    body: Vec<I<'static>>,
}

const WORD: MemArg = MemArg {
    offset: 0,
    align: 2,
    memory_index: 0,
};

/// `bump(src, dst, n, k: i64)`: `dst[i] = src[i] + k` for `i < n` (u32 words).
fn bump() -> Kernel {
    let address = |base: u32| {
        [
            I::LocalGet(base),
            I::LocalGet(4),
            I::I32Const(2),
            I::I32Shl,
            I::I32Add,
        ]
    };
    let mut body = vec![
        I::Block(BlockType::Empty),
        I::Loop(BlockType::Empty),
        I::LocalGet(4),
        I::LocalGet(2),
        I::I32GeU,
        I::BrIf(1),
    ];
    body.extend(address(1));
    body.extend(address(0));
    body.extend([
        I::I32Load(WORD),
        I::LocalGet(3),
        I::I32WrapI64,
        I::I32Add,
        I::I32Store(WORD),
        I::LocalGet(4),
        I::I32Const(1),
        I::I32Add,
        I::LocalSet(4),
        I::Br(0),
        I::End,
        I::End,
        I::End,
    ]);
    Kernel {
        name: "bump",
        params: vec![W::I32, W::I32, W::I32, W::I64],
        body,
    }
}

/// `spin(p)`: loops forever.
fn spin() -> Kernel {
    Kernel {
        name: "spin",
        params: vec![W::I32],
        body: vec![I::Loop(BlockType::Empty), I::Br(0), I::End, I::End],
    }
}

/// `crash(p)`: traps at once.
fn crash() -> Kernel {
    Kernel {
        name: "crash",
        params: vec![W::I32],
        body: vec![I::Unreachable, I::End],
    }
}

/// `stray(p)`: writes its argument's first word, then a word 64 MiB past it.
fn stray() -> Kernel {
    Kernel {
        name: "stray",
        params: vec![W::I32],
        body: vec![
            I::LocalGet(0),
            I::I32Const(0x5ec2e7),
            I::I32Store(WORD),
            I::LocalGet(0),
            I::I32Const(64 << 20),
            I::I32Add,
            I::I32Const(0x5ec2e7),
            I::I32Store(WORD),
            I::End,
        ],
    }
}

/// `poke(address)`: writes a word at `address`, a number, not an argument's pointer.
fn poke() -> Kernel {
    Kernel {
        name: "poke",
        params: vec![W::I32],
        body: vec![
            I::LocalGet(0),
            I::I32Const(0x5ec2e7),
            I::I32Store(WORD),
            I::End,
        ],
    }
}

/// `scribble(p)`: writes its argument's first word over and over, forever.
fn scribble() -> Kernel {
    Kernel {
        name: "scribble",
        params: vec![W::I32],
        body: vec![
            I::Loop(BlockType::Empty),
            I::LocalGet(0),
            I::I32Const(0x5ec2e7),
            I::I32Store(WORD),
            I::Br(0),
            I::End,
            I::End,
        ],
    }
}

/// Adds the import of the kernel's memory, `env.memory` of one page of its own.
/// `count(p, fail)`: adds one to the instance's counter (a global) and writes it to `p[0]`,
/// then traps if `fail` is not 0.
fn count() -> Kernel {
    Kernel {
        name: "count",
        params: vec![W::I32, W::I32],
        body: vec![
            I::GlobalGet(0),
            I::I32Const(1),
            I::I32Add,
            I::GlobalSet(0),
            I::LocalGet(0),
            I::GlobalGet(0),
            I::I32Store(WORD),
            I::LocalGet(1),
            I::If(BlockType::Empty),
            I::Unreachable,
            I::End,
            I::End,
        ],
    }
}

fn import_memory(imports: &mut ImportSection) {
    let one_page = WasmMemory {
        minimum: 1,
        maximum: None,
        memory64: false,
        shared: false,
        page_size_log2: None,
    };
    imports.import("env", "memory", one_page);
}

/// A module importing `env.memory` (one page of its own) and exporting `kernels`; `extra`
/// adds an import the card must refuse.
/// A module of `kernels`, with the one global [`count`] counts in.
fn module(kernels: &[Kernel], extra_import: Option<(&str, &str)>) -> Vec<u8> {
    module_with_globals(kernels, extra_import, 1)
}

/// [`module`], with `globals` mutable `i32` globals (0 at first) for its functions.
fn module_with_globals(
    kernels: &[Kernel],
    extra_import: Option<(&str, &str)>,
    globals: u32,
) -> Vec<u8> {
    let mut types = TypeSection::new();
    let mut imports = ImportSection::new();
    let mut functions = FunctionSection::new();
    let mut exports = ExportSection::new();
    let mut code = CodeSection::new();
    let imported_functions = u32::from(extra_import.is_some());
    if let Some((module, name)) = extra_import {
        types.ty().function([], []);
        imports.import(module, name, EntityType::Function(0));
    }
    import_memory(&mut imports);
    for (index, kernel) in (0u32..).zip(kernels) {
        let ty = index + imported_functions;
        types.ty().function(kernel.params.iter().copied(), []);
        functions.function(ty);
        exports.export(kernel.name, ExportKind::Func, index + imported_functions);
        let mut function = Function::new([(1, W::I32)]);
        for instruction in &kernel.body {
            function.instruction(instruction);
        }
        code.function(&function);
    }
    let mut global_section = GlobalSection::new();
    for _ in 0..globals {
        let ty = GlobalType {
            val_type: W::I32,
            mutable: true,
            shared: false,
        };
        global_section.global(ty, &ConstExpr::i32_const(0));
    }
    let mut module = Module::new();
    module
        .section(&types)
        .section(&imports)
        .section(&functions)
        .section(&global_section)
        .section(&exports)
        .section(&code);
    module.finish()
}

fn meta(kernel: &Kernel) -> KernelMeta {
    let args: Vec<(String, ArgKind, u32)> = (0..)
        .zip(&kernel.params)
        .map(|(i, ty)| match (kernel.name, i, ty) {
            ("bump", 0 | 1, _) | ("spin" | "crash" | "stray" | "scribble" | "count", 0, _) => {
                (format!("p{i}"), ArgKind::Global, 8)
            }
            (_, _, W::I64) => (format!("s{i}"), ArgKind::Scalar, 8),
            _ => (format!("s{i}"), ArgKind::Scalar, 4),
        })
        .collect();
    KernelMeta::with_hls_offsets(kernel.name, &args)
}

/// A card whose kernel launches end after `deadline_ms`.
fn card_with_deadline(deadline_ms: u64) -> EmulatedCard {
    let mut decl = crate::families::xocl::card::decl("k0");
    decl.settings = CardSettings::new(
        XoclCard {
            kernel_deadline_ms: Some(deadline_ms),
        },
        Default::default(),
    );
    EmulatedCard::new(&decl)
}

fn all_kernels() -> Vec<Kernel> {
    vec![
        bump(),
        spin(),
        crash(),
        stray(),
        poke(),
        scribble(),
        count(),
    ]
}

/// The unit that runs [`count`].
const COUNT_CU: u32 = 6;

/// The image of every test kernel, one compute unit each (unit i runs kernel i).
fn image() -> Vec<u8> {
    let kernels = all_kernels();
    let metas: Vec<KernelMeta> = kernels.iter().map(meta).collect();
    XclbinBuilder::kernels(KUUID, &metas, module(&kernels, None), 1).build()
}

/// A client with [`image`] loaded and contexts on every unit.
fn kernel_client(card: &EmulatedCard) -> Box<dyn XoclClient> {
    let client = client(card);
    let image = image();
    client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    for cu in 0..all_kernels().len() as u32 {
        client.open_context(KUUID, cu, false).unwrap();
    }
    client
}

fn sync(client: &dyn XoclClient, bo: &BoInfo, direction: SyncDirection) {
    let done = client
        .submit(
            Command::Sync {
                bo: bo.handle,
                direction,
                offset: 0,
                size: bo.size,
            },
            vec![],
        )
        .unwrap();
    assert_eq!(wait(&done), CompletionState::Complete);
}

fn put(client: &dyn XoclClient, bo: &BoInfo, values: &[u32]) {
    bo.host.write(0, &words(values)).unwrap();
    sync(client, bo, SyncDirection::ToDevice);
}

fn get(client: &dyn XoclClient, bo: &BoInfo, n: usize) -> Vec<u32> {
    sync(client, bo, SyncDirection::FromDevice);
    let mut out = vec![0u8; n * 4];
    bo.host.read(0, &mut out).unwrap();
    out.chunks(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect()
}

/// Launches unit `cu` (kernel `all_kernels()[cu]`) with `values` in its argument order.
fn launch(client: &dyn XoclClient, cu: u32, values: &[u64]) -> Arc<Completion> {
    launch_kernel(client, cu, &meta(&all_kernels()[cu as usize]), values)
}

/// Launches unit `cu`, which runs `kernel`, with `values` in its argument order.
fn launch_kernel(
    client: &dyn XoclClient,
    cu: u32,
    kernel: &KernelMeta,
    values: &[u64],
) -> Arc<Completion> {
    let mut regmap = vec![0u32; (kernel.args_end() / 4) as usize];
    for (arg, &value) in kernel.args.iter().zip(values) {
        let word = (arg.offset / 4) as usize;
        regmap[word] = value as u32;
        if arg.size == 8 {
            regmap[word + 1] = (value >> 32) as u32;
        }
    }
    let packet = StartCu {
        cu_masks: vec![1 << cu],
        regmap,
    }
    .encode();
    client.submit(Command::Exec(packet), vec![]).unwrap()
}

fn failure(state: CompletionState) -> String {
    match state {
        CompletionState::Failed(why) => why.to_string(),
        other => panic!("the launch did not fail: {other:?}"),
    }
}

#[test]
fn a_kernel_from_the_module_reads_and_writes_its_buffers_and_scalars() {
    // Small buffers are copied in and out; large ones mapped, a bank's and host-only ones.
    for (n, bank) in [
        (3000, None),
        (3000, Some(0)),
        (1 << 16, Some(0)),
        (1 << 16, None),
    ] {
        reads_and_writes_its_buffers_and_scalars(n, bank);
    }
}

fn reads_and_writes_its_buffers_and_scalars(n: u32, bank: Option<u32>) {
    let card = card();
    let client = kernel_client(&card);
    let src = client.create_bo(u64::from(n) * 4, bank).unwrap();
    let dst = client.create_bo(u64::from(n) * 4, bank).unwrap();
    put(&*client, &src, &(0..n).collect::<Vec<_>>());
    let k = (7u64 << 32) | 5;
    let run = launch(
        &*client,
        0,
        &[src.device_address, dst.device_address, u64::from(n), k],
    );
    assert_eq!(wait(&run), CompletionState::Complete);
    assert_eq!(
        get(&*client, &dst, n as usize),
        (0..n).map(|i| i + 5).collect::<Vec<_>>(),
        "the i64 scalar arrived whole (its low word added)"
    );
    // Two pointers into one buffer object see one window: the second half becomes the first
    // half plus one, written where the kernel reads it next.
    let half = n / 2;
    let run = launch(
        &*client,
        0,
        &[
            src.device_address,
            src.device_address + u64::from(half) * 4,
            u64::from(half),
            1,
        ],
    );
    assert_eq!(wait(&run), CompletionState::Complete);
    let values = get(&*client, &src, n as usize);
    assert_eq!(values[..half as usize], (0..half).collect::<Vec<_>>());
    assert_eq!(
        values[half as usize..],
        (0..half).map(|i| i + 1).collect::<Vec<_>>()
    );
}

#[test]
fn an_endless_kernel_ends_at_its_deadline_and_the_card_goes_on() {
    let card = card_with_deadline(150);
    let client = kernel_client(&card);
    let bo = client.create_bo(4096, None).unwrap();
    put(&*client, &bo, &[41]);
    let started = Instant::now();
    let endless = launch(&*client, 1, &[bo.device_address]);
    let why = failure(wait(&endless));
    let took = started.elapsed();
    assert!(why.contains("ran past its deadline"), "{why}");
    assert!(why.contains("spin_1"), "names its unit: {why}");
    assert!(
        took >= Duration::from_millis(150) && took < Duration::from_secs(5),
        "ended after {took:?}"
    );
    let dst = client.create_bo(4096, None).unwrap();
    let run = launch(&*client, 0, &[bo.device_address, dst.device_address, 1, 1]);
    assert_eq!(wait(&run), CompletionState::Complete);
    assert_eq!(get(&*client, &dst, 1), [42]);
}

#[test]
fn a_trapping_or_straying_kernel_fails_its_launch_and_writes_only_its_own_buffers() {
    let card = card();
    let client = kernel_client(&card);
    let other = client_of_image(&card);
    let theirs = other.create_bo(4096, None).unwrap();
    put(&*other, &theirs, &[7; 1024]);
    let mine = client.create_bo(4096, None).unwrap();
    put(&*client, &mine, &[9; 1024]);

    let why = failure(wait(&launch(&*client, 2, &[mine.device_address])));
    assert!(why.contains("the kernel trapped"), "{why}");
    assert!(why.contains("unreachable"), "{why}");

    // 64 MiB past its argument lies past the launch's memory: a trap, not a write into the
    // bank (where another client's buffer could be).
    let why = failure(wait(&launch(&*client, 3, &[mine.device_address])));
    assert!(why.contains("out of bounds"), "{why}");

    // A pointer into another client's buffer is refused before the kernel runs.
    let why = failure(wait(&launch(
        &*client,
        0,
        &[theirs.device_address, mine.device_address, 4, 1],
    )));
    assert!(why.contains("argument 'p0'"), "{why}");
    assert!(
        why.contains("outside this client's buffer objects"),
        "{why}"
    );

    // A host address is no address of the kernel's: the host backing of another client's
    // buffer, written by number, is out of the launch's memory.
    let host_address = theirs.host.user_address();
    let why = failure(wait(&launch(&*client, 4, &[host_address & 0xffff_ffff])));
    assert!(why.contains("out of bounds"), "{why}");
    let mut backing = vec![0u8; 4096];
    theirs.host.read(0, &mut backing).unwrap();
    assert_eq!(backing, words(&[7; 1024]), "the host memory is untouched");

    assert_eq!(get(&*other, &theirs, 1024), vec![7; 1024]);
    assert_eq!(get(&*client, &mine, 1024), vec![9; 1024]);

    // A large buffer mapped into the launch, a bank's or a host-only one, keeps what the
    // kernel wrote before it trapped (as on hardware), and nothing past it: the rest of the
    // bank, and the host memory around, is not the kernel's.
    for bank in [Some(0), None] {
        let neighbour = other.create_bo(MAP_AT_LEAST, bank).unwrap();
        let mapped = client.create_bo(MAP_AT_LEAST, bank).unwrap();
        let after = other.create_bo(64 << 20, bank).unwrap();
        put(&*other, &neighbour, &[7; 1024]);
        put(&*other, &after, &[7; 1024]);
        put(&*client, &mapped, &[9; 1024]);
        let why = failure(wait(&launch(&*client, 3, &[mapped.device_address])));
        assert!(why.contains("out of bounds"), "{bank:?}: {why}");
        let mut expected = vec![9; 1024];
        expected[0] = 0x5ec2e7;
        assert_eq!(get(&*client, &mapped, 1024), expected, "{bank:?}");
        assert_eq!(get(&*other, &neighbour, 1024), vec![7; 1024], "{bank:?}");
        assert_eq!(get(&*other, &after, 1024), vec![7; 1024], "{bank:?}");
    }
}

#[test]
fn a_freed_buffers_bank_range_reads_as_zeros_to_its_next_owner() {
    let card = card();
    let first = kernel_client(&card);
    let second = client_of_image(&card);
    // Zeroed in place, then discarded.
    for size in [4096, MAP_AT_LEAST, ZEROED_IN_PLACE + 4096] {
        let gone = first.create_bo(size, Some(0)).unwrap();
        put(&*first, &gone, &[0x5ec2e7; 1024]);
        first.free_bo(gone.handle).unwrap();
        let next = second.create_bo(size, Some(0)).unwrap();
        assert_eq!(next.device_address, gone.device_address, "the same range");
        assert_eq!(get(&*second, &next, 1024), vec![0; 1024]);
        second.free_bo(next.handle).unwrap();
    }
}

#[test]
fn a_buffer_freed_under_a_running_kernel_goes_to_no_one_until_the_launch_ends() {
    let card = card_with_deadline(400);
    let client = kernel_client(&card);
    let other = client_of_image(&card);
    let doomed = client.create_bo(MAP_AT_LEAST, Some(0)).unwrap();
    let running = launch(&*client, 5, &[doomed.device_address]);
    // The kernel writes the buffer itself, while it runs.
    let started = Instant::now();
    while get(&*client, &doomed, 1) != [0x5ec2e7] {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the kernel never wrote"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    client.free_bo(doomed.handle).unwrap();
    let theirs = other.create_bo(MAP_AT_LEAST, Some(0)).unwrap();
    assert_ne!(
        theirs.device_address, doomed.device_address,
        "the range is parked while the kernel maps it"
    );
    let why = failure(wait(&running));
    assert!(why.contains("ran past its deadline"), "{why}");
    assert_eq!(get(&*other, &theirs, 1024), vec![0; 1024]);
    // After the launch the range is the bank's again, and holds nothing of the kernel's.
    let next = other.create_bo(MAP_AT_LEAST, Some(0)).unwrap();
    assert_eq!(next.device_address, doomed.device_address);
    assert_eq!(get(&*other, &next, 1024), vec![0; 1024]);
}

#[test]
fn a_launchs_memory_is_charged_to_its_clients_dma_budget() {
    let card = card();
    let client = card
        .open(&crate::devices::Owner::new(3 << 20, u64::MAX))
        .unwrap();
    let image = image();
    client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    client.open_context(KUUID, 0, false).unwrap();
    let small = client.create_bo(1 << 20, None).unwrap();
    let run = launch(
        &*client,
        0,
        &[small.device_address, small.device_address, 4, 1],
    );
    assert_eq!(
        wait(&run),
        CompletionState::Complete,
        "1 MiB of buffers and 1 MiB of launch"
    );
    // 1 MiB kept, 2 MiB more: the budget is spent, and the launch's 2 MiB is over it.
    let large = client.create_bo(2 << 20, None).unwrap();
    let run = launch(
        &*client,
        0,
        &[large.device_address, large.device_address, 4, 1],
    );
    let why = failure(wait(&run));
    assert!(why.contains("its kernel memory of"), "{why}");

    // A bank's buffer is mapped, not copied: the launch adds only the module's own page.
    client.free_bo(large.handle).unwrap();
    drop(large);
    let banked = client.create_bo(3 << 19, Some(0)).unwrap();
    let run = launch(
        &*client,
        0,
        &[banked.device_address, banked.device_address, 4, 1],
    );
    assert_eq!(
        wait(&run),
        CompletionState::Complete,
        "2.5 MiB kept; a copy of 1.5 MiB would not fit"
    );
}

/// The card's kernel module (of the image [`kernel_client`] loads).
fn loaded_program(card: &EmulatedCard) -> Arc<KernelProgram> {
    let programs = lock(&card.card.state).kernel_programs();
    assert_eq!(programs.len(), 1, "one image of kernels");
    programs[0].clone()
}

#[test]
fn a_launchs_instance_is_kept_for_its_client_and_buffers_only() {
    let card = card();
    let client = kernel_client(&card);
    let counted = |client: &dyn XoclClient, bo: &BoInfo, fail: u64| {
        let run = launch(client, COUNT_CU, &[bo.device_address, fail]);
        match wait(&run) {
            CompletionState::Complete => Some(get(client, bo, 1)[0]),
            _ => None,
        }
    };
    let (small, banked) = (
        client.create_bo(4096, None).unwrap(),
        client.create_bo(MAP_AT_LEAST, Some(0)).unwrap(),
    );
    // The same buffers at the same places: the instance that ran the last launch.
    assert_eq!(counted(&*client, &small, 0), Some(1));
    assert_eq!(counted(&*client, &small, 0), Some(2));
    assert_eq!(
        counted(&*client, &banked, 0),
        Some(1),
        "other buffers: fresh"
    );
    assert_eq!(
        counted(&*client, &banked, 0),
        Some(2),
        "a mapped buffer's too"
    );
    assert_eq!(counted(&*client, &small, 0), Some(3), "both kept");
    // A trap ends its instance, kept or not.
    assert_eq!(counted(&*client, &small, 1), None);
    assert_eq!(counted(&*client, &small, 0), Some(1), "after a trap: fresh");

    // Another client of the same image never runs in this client's instances, even over a
    // buffer in the very bank range this client's had.
    let other = client_of_image(&card);
    other.open_context(KUUID, COUNT_CU, false).unwrap();
    client.free_bo(banked.handle).unwrap();
    let reused = other.create_bo(MAP_AT_LEAST, Some(0)).unwrap();
    assert_eq!(reused.device_address, banked.device_address);
    assert_eq!(counted(&*other, &reused, 0), Some(1));
    let program = loaded_program(&card);
    assert_eq!(
        program.kept_instances(),
        3,
        "two of the first client, one of the other"
    );

    // Closing a client gives back what its kept instances held.
    drop(client);
    assert_eq!(program.kept_instances(), 1);

    // A large host-only buffer is mapped, not copied: its instance holds no copy of it, and
    // is kept as a bank buffer's is.
    let large = other.create_bo(KEEP_AT_MOST, None).unwrap();
    assert_eq!(counted(&*other, &large, 0), Some(1));
    assert_eq!(counted(&*other, &large, 0), Some(2), "kept");
    assert_eq!(program.kept_instances(), 2);
}

#[test]
fn a_client_launching_over_ever_other_buffers_pushes_out_its_own_kept_instances_first() {
    let card = card();
    let counted = |client: &dyn XoclClient, bo: &BoInfo| {
        let run = launch(client, COUNT_CU, &[bo.device_address, 0]);
        assert_eq!(wait(&run), CompletionState::Complete);
        get(client, bo, 1)[0]
    };
    let quiet = kernel_client(&card);
    let quiets = quiet.create_bo(4096, None).unwrap();
    assert_eq!(counted(&*quiet, &quiets), 1);
    let busy = client_of_image(&card);
    busy.open_context(KUUID, COUNT_CU, false).unwrap();
    // Copied buffers of one length share an instance (their copies are refilled whole):
    // each of these is another length.
    let busys: Vec<BoInfo> = (2..2 + 2 * KEPT_INSTANCES as u64)
        .map(|pages| busy.create_bo(pages * 4096, None).unwrap())
        .collect();
    for bo in &busys {
        assert_eq!(counted(&*busy, bo), 1);
    }
    let program = loaded_program(&card);
    assert_eq!(program.kept_instances(), KEPT_INSTANCES);
    assert_eq!(
        counted(&*quiet, &quiets),
        2,
        "the quiet client's instance outlived the busy one's launches"
    );
    assert_eq!(
        counted(&*busy, busys.last().unwrap()),
        2,
        "the busy client keeps its newest"
    );
    assert_eq!(counted(&*busy, &busys[0]), 1, "and lost its oldest");
}

#[test]
fn kept_instances_hold_their_clients_budget_until_it_closes_or_needs_the_room() {
    let card = card();
    let owner = crate::devices::Owner::new(3 << 20, u64::MAX);
    let dma = owner.dma.clone();
    let client = card.open(&owner).unwrap();
    let image = image();
    client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    client.open_context(KUUID, COUNT_CU, false).unwrap();
    let bo = client.create_bo(1 << 20, None).unwrap();
    let run = launch(&*client, COUNT_CU, &[bo.device_address, 0]);
    assert_eq!(wait(&run), CompletionState::Complete);
    let kept = dma.used() - (1 << 20);
    assert!(kept > 0, "the kept instance holds its own pages");
    // A buffer that fits only without the kept instance gets its room.
    let filler = client.create_bo(2 << 20, None).unwrap();
    assert_eq!(
        dma.used(),
        3 << 20,
        "the kept instance gave its memory back"
    );
    client.free_bo(filler.handle).unwrap();
    drop(filler);
    let run = launch(&*client, COUNT_CU, &[bo.device_address, 0]);
    assert_eq!(wait(&run), CompletionState::Complete);
    assert!(dma.used() > 1 << 20, "kept again");
    drop(bo);
    drop(client);
    assert_eq!(dma.used(), 0, "nothing held once the client closed");
}

/// A second client of a card [`kernel_client`] loaded.
fn client_of_image(card: &EmulatedCard) -> Box<dyn XoclClient> {
    let client = client(card);
    client.open_context(KUUID, 0, false).unwrap();
    client
}

#[test]
fn modules_the_card_cannot_run_are_refused_at_load_naming_why() {
    let card = card();
    let client = client(&card);
    let refuse = |kernels: Vec<Kernel>, metas: Vec<KernelMeta>, module: Vec<u8>| {
        let image = XclbinBuilder::kernels(KUUID, &metas, module, 1).build();
        let err = client
            .load_xclbin(&image, &parse(&image).unwrap())
            .unwrap_err();
        drop(kernels);
        err.to_string()
    };
    let why = refuse(
        vec![],
        vec![meta(&bump())],
        module(&[bump()], Some(("wasi_snapshot_preview1", "fd_write"))),
    );
    assert!(
        why.contains("imports wasi_snapshot_preview1.fd_write (a function)"),
        "{why}"
    );
    let why = refuse(vec![], vec![meta(&bump())], module(&[spin()], None));
    assert!(why.contains("exports no function 'bump'"), "{why}");
    let mut narrow = meta(&bump());
    narrow.args[3].size = 4;
    let why = refuse(vec![], vec![narrow], module(&[bump()], None));
    assert!(
        why.contains("argument 's3' (Scalar, 4 bytes) is a i64 in the module"),
        "{why}"
    );
    let why = refuse(
        vec![],
        vec![meta(&bump())],
        b"\0asm\x01\0\0\0garbage".to_vec(),
    );
    assert!(why.contains("does not compile"), "{why}");
    // Nothing was loaded by the refusals.
    assert!(client.loaded_xclbin().is_none());
}

#[test]
fn a_loaded_modules_code_is_charged_to_its_loader_while_the_card_keeps_it() {
    let image = image();
    let owner = crate::devices::Owner::new(u64::MAX, u64::MAX);
    let first = card();
    let client = first.open(&owner).unwrap();
    let before = owner.host.used();
    client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    let code = owner.host.used() - before;
    assert!(code > 0, "the compiled code is charged");
    drop(client);
    drop(first);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while owner.host.used() != before {
        assert!(
            std::time::Instant::now() < deadline,
            "the card let the program go, and the charge stays: {} of {before}",
            owner.host.used()
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }

    // A loader whose budget has less room than the code: refused, nothing loaded.
    let second = card();
    let tight = crate::devices::Owner::new(u64::MAX, 1 << 30);
    let client = second.open(&tight).unwrap();
    let _filler = tight.host.charge(tight.host.left() - (code - 1)).unwrap();
    let err = client
        .load_xclbin(&image, &parse(&image).unwrap())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
    assert!(
        err.to_string()
            .contains("the compiled kernel module does not fit"),
        "{err}"
    );
    assert!(client.loaded_xclbin().is_none());
}

/// An image of every kernel whose uuid is made of `n`: images that differ only in their name.
fn numbered_image(n: u64) -> Vec<u8> {
    let kernels = all_kernels();
    let metas: Vec<KernelMeta> = kernels.iter().map(meta).collect();
    XclbinBuilder::kernels(Guid::new(n, n), &metas, module(&kernels, None), 1).build()
}

/// A card, an owner with a 1 GiB host budget, and its client, for the loading tests.
fn loader() -> (EmulatedCard, crate::devices::Owner, Box<dyn XoclClient>) {
    let card = card();
    let owner = crate::devices::Owner::new(u64::MAX, 1 << 30);
    let client = card.open(&owner).unwrap();
    (card, owner, client)
}

/// Loads [`numbered_image`]`(n)` through `client`.
fn load_numbered(client: &dyn XoclClient, n: u64) -> std::io::Result<u32> {
    let image = numbered_image(n);
    client.load_xclbin(&image, &parse(&image).unwrap())
}

#[test]
fn a_loader_out_of_room_for_code_gets_back_what_its_idle_images_held() {
    let (_card, owner, client) = loader();
    let load = |n: u64| load_numbered(&*client, n);
    let before = owner.host.used();
    load(1).unwrap();
    let code = owner.host.used() - before;
    // Room for two programs' code and a half.
    let filler_bytes = owner.host.left() - code - code / 2;
    let _filler = owner.host.charge(filler_bytes).unwrap();
    client.open_context(Guid::new(1, 1), 0, false).unwrap();
    let second = load(2).unwrap();
    // No room for a third: image 2, which no context holds, goes; image 1 stays.
    let third = load(3).unwrap();
    assert_eq!(owner.host.used(), before + filler_bytes + 2 * code);
    let gone = client
        .open_context(Guid::new(2, 2), second, false)
        .unwrap_err();
    assert!(gone.to_string().contains("not loaded"), "{gone}");
    client.open_context(Guid::new(1, 1), 1, false).unwrap();
    client.open_context(Guid::new(3, 3), third, false).unwrap();
    // Both held now: the next is refused, and neither was unloaded for it.
    let err = load(4).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory, "{err}");
    client.open_context(Guid::new(1, 1), 2, false).unwrap();
    client
        .open_context(Guid::new(3, 3), third + 1, false)
        .unwrap();
    assert_eq!(owner.host.used(), before + filler_bytes + 2 * code);
}

#[test]
fn idle_images_keep_to_half_the_loaders_budget() {
    let (_card, owner, client) = loader();
    let load = |n: u64| load_numbered(&*client, n);
    let before = owner.host.used();
    let first = load(1).unwrap();
    let code = owner.host.used() - before;
    // A second program's code fits beside the first's, but past half the budget: the first,
    // which no context holds, goes (a plugin's call that loads holds more than the code
    // until it ends, and the ledger faults a plugin over its limit then).
    let filler_bytes = owner.host.limit() / 2 - before - 2 * code + code / 2;
    let _filler = owner.host.charge(filler_bytes).unwrap();
    assert!(owner.host.left() > 2 * code);
    let second = load(2).unwrap();
    assert_eq!(owner.host.used(), before + filler_bytes + code);
    let gone = client
        .open_context(Guid::new(1, 1), first, false)
        .unwrap_err();
    assert!(gone.to_string().contains("not loaded"), "{gone}");
    // One a context holds stays, past half or not.
    client.open_context(Guid::new(2, 2), second, false).unwrap();
    load(3).unwrap();
    assert_eq!(owner.host.used(), before + filler_bytes + 2 * code);
}

#[test]
fn a_load_refused_for_its_code_leaves_an_image_of_other_banks_in_place() {
    let kernels = all_kernels();
    let metas: Vec<KernelMeta> = kernels.iter().map(meta).collect();
    let card = card();
    let image = image();
    let loader = client(&card);
    loader.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    drop(loader);
    let other_banks = XclbinBuilder::kernels(Guid::new(9, 9), &metas, module(&kernels, None), 1)
        .bank(
            MemKind::Ddr4,
            "bank1",
            VADD_BANK_BASE + VADD_BANK_SIZE,
            VADD_BANK_SIZE,
        )
        .build();
    let tight = crate::devices::Owner::new(u64::MAX, 1 << 30);
    let client = card.open(&tight).unwrap();
    let _filler = tight.host.charge(tight.host.left()).unwrap();
    let err = client
        .load_xclbin(&other_banks, &parse(&other_banks).unwrap())
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory, "{err}");
    let loaded = client.loaded_xclbin().expect("the first image stays");
    assert_eq!(loaded.xclbin.uuid, KUUID);
}

/// A module whose work-groups may be shared (it exports the share setter, which keeps its
/// arguments in two globals), with two kernels of one pointer `p`: `whoami` writes the share
/// count at `p[index]`; `split` traps in share 1 and loops forever in every other.
fn shared_module() -> Vec<u8> {
    let set_share = Kernel {
        name: SHARE_EXPORT,
        params: vec![W::I32, W::I32],
        body: vec![
            I::LocalGet(0),
            I::GlobalSet(0),
            I::LocalGet(1),
            I::GlobalSet(1),
            I::End,
        ],
    };
    let whoami = Kernel {
        name: "whoami",
        params: vec![W::I32],
        body: vec![
            I::LocalGet(0),
            I::GlobalGet(0),
            I::I32Const(2),
            I::I32Shl,
            I::I32Add,
            I::GlobalGet(1),
            I::I32Store(WORD),
            I::End,
        ],
    };
    let split = Kernel {
        name: "split",
        params: vec![W::I32],
        body: vec![
            I::GlobalGet(0),
            I::I32Const(1),
            I::I32Eq,
            I::If(BlockType::Empty),
            I::Unreachable,
            I::End,
            I::Loop(BlockType::Empty),
            I::Br(0),
            I::End,
            I::End,
        ],
    };
    module_with_globals(&[set_share, whoami, split], None, 2)
}

const SHARED_UUID: Guid = Guid::new(0x5348, 0x4152);

/// A client of `card` with [`shared_module`]'s image loaded: unit 0 runs `whoami`, unit 1
/// `split`.
fn shared_client(card: &EmulatedCard) -> (Box<dyn XoclClient>, Vec<KernelMeta>) {
    let metas: Vec<KernelMeta> = ["whoami", "split"]
        .iter()
        .map(|name| KernelMeta::with_hls_offsets(name, &[("p".to_owned(), ArgKind::Global, 8)]))
        .collect();
    let image = XclbinBuilder::kernels(SHARED_UUID, &metas, shared_module(), 1).build();
    let client = client(card);
    client.load_xclbin(&image, &parse(&image).unwrap()).unwrap();
    for cu in 0..2 {
        client.open_context(SHARED_UUID, cu, false).unwrap();
    }
    (client, metas)
}

/// How many shares a large launch of a module that allows them runs in on this machine.
fn cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| {
        n.get().min(crate::families::xocl::emu::kernels::MAX_SHARES) as u32
    })
}

#[test]
fn a_large_launch_of_a_shareable_module_runs_one_share_per_core() {
    let card = card();
    let (client, metas) = shared_client(&card);
    let shares = cores();
    let unwritten = [u32::MAX; 8];
    let whoami = |bo: &BoInfo| {
        put(&*client, bo, &unwritten);
        let run = launch_kernel(&*client, 0, &metas[0], &[bo.device_address]);
        assert_eq!(wait(&run), CompletionState::Complete);
        get(&*client, bo, 8)
    };
    let told_of = |count: u32, instances: usize| {
        let mut expected = unwritten;
        expected[..instances].fill(count);
        expected.to_vec()
    };
    // Below the size worth a thread, one instance runs it all, told of no shares.
    let small = client.create_bo(MAP_AT_LEAST, Some(0)).unwrap();
    assert_eq!(whoami(&small), told_of(0, 1));
    let large = client.create_bo(1 << 20, Some(0)).unwrap();
    if shares > 1 {
        assert_eq!(whoami(&large), told_of(shares, shares as usize));
    } else {
        assert_eq!(whoami(&large), told_of(0, 1), "one core: one instance");
    }
    // A large host-only buffer is mapped too, so its launch is shared alike.
    let host = client.create_bo(2 << 20, None).unwrap();
    assert_eq!(whoami(&host), whoami(&large));
}

#[test]
fn a_share_that_traps_stops_the_others_and_fails_the_launch_with_its_trap() {
    if cores() < 2 {
        eprintln!("skipped: one core here, so no launch runs in shares");
        return;
    }
    let card = card_with_deadline(8_000);
    let (client, metas) = shared_client(&card);
    let bo = client.create_bo(1 << 20, Some(0)).unwrap();
    let started = Instant::now();
    let run = launch_kernel(&*client, 1, &metas[1], &[bo.device_address]);
    let why = failure(wait(&run));
    assert!(why.contains("unreachable"), "{why}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the looping share was stopped, not left to its deadline: {:?}",
        started.elapsed()
    );
}
