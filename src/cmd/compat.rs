//! Spin compatibility: is every import of a component offered by Spin's
//! platform world, and by Cairn's own contract in `wit/`?
//!
//! Spin's world (`spin:up`'s `platform`, in Spin's `wit/world.wit`) is read
//! from Spin's own source, never from a copy in this repository: a directory
//! given with `--spin-wit`, else the source tarball beside the project
//! (`../shared/spin/spin-src-*.tar.xz`, Spin's main at the commit the `spin`
//! binary there was built from), unpacked once into `target/spin-wit`.
//! (spin-sdk 7, the SDK the components are built with, no longer ships
//! Spin's platform world.) Versions compare the way hosts link them:
//! an import is satisfied by an offered interface of the same name whose
//! version is semver-compatible and not older (`0.2.0` by `0.2.6`, never
//! `0.2.12` by `0.2.6`); pre-release versions must match exactly.
//!
//! Imports a component's `[component.<id>.dependencies]` fill are composed
//! at load time (Spin >= 3.5) and never reach the platform: for those the
//! check is that the dependency exports what the manifest says, that the
//! component imports that name, and that the dependency's own imports keep
//! to the same two worlds.

use anyhow::{Context, Result, bail};
use semver::Version;
use std::path::{Path, PathBuf};
use std::process::Command;
use wit_parser::{Resolve, WorldItem};

/// The interfaces a world offers: `(namespace:package/interface, version)`.
#[derive(Debug, Clone, Default)]
pub struct Offered {
    /// Name of the world, for messages.
    pub world: String,
    /// Offered interfaces.
    pub interfaces: Vec<(String, Option<Version>)>,
}

/// Split `ns:pkg/iface@1.2.3` into name and version.
pub fn split(id: &str) -> (String, Option<Version>) {
    match id.split_once('@') {
        Some((name, v)) => (name.to_string(), Version::parse(v).ok()),
        None => (id.to_string(), None),
    }
}

/// Whether an import at `want` is satisfied by an offer at `have`.
pub fn satisfies(have: &Option<Version>, want: &Option<Version>) -> bool {
    match (have, want) {
        (None, None) => true,
        (Some(h), Some(w)) if !h.pre.is_empty() || !w.pre.is_empty() => h == w,
        (Some(h), Some(w)) if h.major == 0 && w.major == 0 => h.minor == w.minor && w.patch <= h.patch,
        (Some(h), Some(w)) => h.major == w.major && (w.minor, w.patch) <= (h.minor, h.patch),
        _ => false,
    }
}

impl Offered {
    /// Read `world` of the main package of a WIT directory (whose name must
    /// be `package`, e.g. `spin:up`).
    pub fn from_wit_dir(dir: &Path, package: &str, world: &str) -> Result<Self> {
        let mut resolve = Resolve::new();
        let (pkg, _) = resolve.push_dir(dir).with_context(|| format!("cannot parse the WIT in {}", dir.display()))?;
        let found = &resolve.packages[pkg];
        let name = format!("{}:{}", found.name.namespace, found.name.name);
        if name != package {
            bail!("{} holds package {name}, expected {package}", dir.display());
        }
        let world_id = *found.worlds.get(world).with_context(|| format!("{package} has no world {world}"))?;
        let world = format!("{package}/{world}");
        let mut interfaces = Vec::new();
        for item in resolve.worlds[world_id].imports.values() {
            if let WorldItem::Interface { id, .. } = item
                && let Some(name) = resolve.id_of(*id)
            {
                interfaces.push(split(&name));
            }
        }
        Ok(Self { world, interfaces })
    }

    /// Why `import` is not offered, or `None` when it is.
    pub fn refuse(&self, import: &str) -> Option<String> {
        let (name, version) = split(import);
        let same_name: Vec<_> = self.interfaces.iter().filter(|(n, _)| *n == name).collect();
        if same_name.iter().any(|(_, v)| satisfies(v, &version)) {
            return None;
        }
        if same_name.is_empty() {
            Some(format!("{import}: {} offers no {name}", self.world))
        } else {
            let versions: Vec<String> = same_name.iter().map(|(_, v)| v.as_ref().map(|v| v.to_string()).unwrap_or_default()).collect();
            Some(format!("{import}: {} offers {name} only at {}", self.world, versions.join(", ")))
        }
    }
}

/// Imports and exports of a component, as `ns:pkg/iface@version` names.
///
/// Read from the component's own import and export sections after
/// validating it: a component declares both in its binary, so nothing is
/// compiled (compiling every component of a manifest to machine code, as
/// loading it does, takes minutes on two cores; this takes milliseconds).
/// Only the outermost component's names count: the core modules and
/// components nested in it import and export among themselves.
pub fn component_interfaces(wasm: &Path) -> Result<(Vec<String>, Vec<String>)> {
    use wasmparser::{Parser, Payload, Validator, WasmFeatures};
    let bytes = std::fs::read(wasm).with_context(|| format!("cannot read {}", wasm.display()))?;
    if !Parser::is_component(&bytes) {
        bail!("{} is not a WebAssembly component", wasm.display());
    }
    Validator::new_with_features(WasmFeatures::all()).validate_all(&bytes).with_context(|| format!("{} is not a valid component", wasm.display()))?;
    let (mut imports, mut exports, mut depth) = (Vec::new(), Vec::new(), 0usize);
    for payload in Parser::new(0).parse_all(&bytes) {
        match payload.with_context(|| format!("cannot read {}", wasm.display()))? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 0 => {
                for import in section {
                    imports.push(import?.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(section) if depth == 0 => {
                for export in section {
                    exports.push(export?.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

/// Spin's `wit/` directory: `given`, else the one in Spin's source tarball
/// beside the project (`../shared/spin/spin-src-*.tar.xz`), unpacked once
/// into `target/spin-wit` under `root`.
pub fn spin_wit(root: &Path, given: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = given {
        return Ok(dir.to_path_buf());
    }
    let unpacked = root.join("target/spin-wit/spin-src/wit");
    if unpacked.join("world.wit").exists() {
        return Ok(unpacked);
    }
    let shared = root.join("../shared/spin");
    let tarball = std::fs::read_dir(&shared)
        .with_context(|| format!("no Spin source at {} (give --spin-wit <Spin's wit/ directory>)", shared.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("spin-src-") && n.to_string_lossy().ends_with(".tar.xz")))
        .with_context(|| format!("no spin-src-*.tar.xz in {}", shared.display()))?;
    let dest = root.join("target/spin-wit");
    std::fs::create_dir_all(&dest)?;
    let status = Command::new("tar").arg("-xJf").arg(&tarball).arg("-C").arg(&dest).arg("spin-src/wit").status().context("cannot run tar")?;
    if !status.success() || !unpacked.join("world.wit").exists() {
        bail!("cannot unpack spin-src/wit from {}", tarball.display());
    }
    Ok(unpacked)
}

/// The workspace holding `start`: the nearest ancestor with `wit/cairn.wit`.
pub fn workspace_root(start: &Path) -> Result<PathBuf> {
    let start = std::fs::canonicalize(start).with_context(|| format!("no such directory {}", start.display()))?;
    start
        .ancestors()
        .find(|d| d.join("wit/cairn.wit").exists() && d.join("Cargo.toml").exists())
        .map(Path::to_path_buf)
        .with_context(|| format!("no Cairn workspace (wit/cairn.wit) above {}", start.display()))
}

/// Check every component of a manifest against Spin's platform world and
/// Cairn's `host` world. Returns one line per problem (empty: compatible)
/// and prints a line per component.
pub fn check_manifest(manifest_path: &Path, workspace_root: &Path, spin_wit_dir: Option<&Path>) -> Result<Vec<String>> {
    let manifest = crate::manifest::Manifest::load(manifest_path)?;
    let spin = Offered::from_wit_dir(&spin_wit(workspace_root, spin_wit_dir)?, "spin:up", "platform")?;
    let ours = Offered::from_wit_dir(&workspace_root.join("wit"), "cairn:platform", "guest")?;
    let mut problems = Vec::new();
    for c in &manifest.components {
        let (imports, exports) = component_interfaces(&c.source)?;
        let mut mine = Vec::new();
        // Imports filled by `[component.<id>.dependencies]` are composed at
        // load time (Spin >= 3.5), so the platform never sees them; instead
        // each dependency must export what it is said to.
        for dep in &c.dependencies {
            let (dep_imports, dep_exports) = component_interfaces(&dep.source)?;
            if !dep_exports.contains(&dep.export) {
                mine.push(format!("dependency {:?}: {} does not export {}", dep.import, dep.source.display(), dep.export));
            }
            if !imports.contains(&dep.import) {
                mine.push(format!("dependency {:?}: the component imports no such name", dep.import));
            }
            for p in refuse_imports(&dep_imports, &[], &spin, &ours) {
                mine.push(format!("dependency {:?}: {p}", dep.import));
            }
        }
        let composed: Vec<&str> = c.dependencies.iter().map(|d| d.import.as_str()).collect();
        mine.extend(refuse_imports(&imports, &composed, &spin, &ours));
        let exports_handler =
            exports.iter().map(|e| split(e)).any(|(n, v)| n == "wasi:http/handler" && v.is_some_and(|v| v.major == 0 && v.minor == 3 && v.pre.is_empty()));
        if !exports_handler {
            mine.push("does not export wasi:http/handler@0.3.x (a WASI 0.3 service)".to_string());
        }
        println!("{:<20} {} imports, {}", c.id, imports.len(), if mine.is_empty() { "compatible" } else { "NOT compatible" });
        problems.extend(mine.into_iter().map(|p| format!("{}: {p}", c.id)));
    }
    Ok(problems)
}

/// Why each of `imports` (except the `composed` ones) is not offered by
/// Spin's world, or beyond the standard WASI sets by our contract.
fn refuse_imports(imports: &[String], composed: &[&str], spin: &Offered, ours: &Offered) -> Vec<String> {
    let mut out = Vec::new();
    for import in imports.iter().filter(|i| !composed.contains(&i.as_str())) {
        out.extend(spin.refuse(import));
        let standard =
            ["wasi:cli/", "wasi:io/", "wasi:clocks/", "wasi:random/", "wasi:filesystem/", "wasi:sockets/", "wasi:http/"].iter().any(|p| import.starts_with(p));
        if !standard {
            out.extend(ours.refuse(import));
        }
    }
    out
}

/// Arguments of `cairn compat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The application manifest.
    #[arg(long, short = 'f', default_value = "spin.toml")]
    pub manifest: PathBuf,
    /// Spin's `wit/` directory (default: from Spin's source tarball in
    /// `../shared/spin`).
    #[arg(long)]
    pub spin_wit: Option<PathBuf>,
}

/// Check every component and print the verdict; an error lists the problems.
pub fn run(a: Args) -> Result<()> {
    let dir = a.manifest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let root = workspace_root(dir)?;
    let problems = check_manifest(&a.manifest, &root, a.spin_wit.as_deref())?;
    if problems.is_empty() {
        println!("every component keeps to Spin's platform world and Cairn's contract");
        return Ok(());
    }
    for p in &problems {
        eprintln!("{p}");
    }
    bail!("{} incompatible import(s)", problems.len())
}
