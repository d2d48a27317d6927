//! The page's libraries come from npm (`package-lock.json`); the component
//! embeds their ESM builds as shipped. Say what to run when they are missing.
fn main() {
    for file in ["node_modules/marked/lib/marked.esm.js", "node_modules/dompurify/dist/purify.es.mjs"] {
        println!("cargo:rerun-if-changed={file}");
        if !std::path::Path::new(file).exists() {
            panic!("components/ui/{file} is missing: run `npm ci --prefix components/ui` (the ui component's build command in spin.toml does)");
        }
    }
    println!("cargo:rerun-if-changed=assets");
}
