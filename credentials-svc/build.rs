//! `sqlx::migrate!` embeds the migrations when the crate compiles, and stable Rust cannot
//! tell Cargo to watch the directory it reads: a new migration file would not be seen
//! until something else made the crate rebuild. This tells Cargo to rebuild on any change
//! under `migrations/`.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
