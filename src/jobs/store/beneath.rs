//! Every local file the jobs library opens, makes, renames, removes or looks at goes through here,
//! so that a daemon keeps its jobs inside `--jobs-dir` whatever links are in it.
//!
//! A daemon's jobs name files under its folder, and their specs are checked when they are created
//! (`spec.rs`). A check is not enough: a link made inside the folder after it (an output swapped
//! for a link to `/etc/passwd` between the create and the run, a folder on the way swapped for a
//! link to `/`) would lead the run's reads and writes outside. So once [`confine`] is called
//! (by the daemon's board, for its folder; the commands never call it), each path must name a
//! place under that folder and is resolved beneath it by the kernel, every time it is used:
//! `openat2(2)` with `RESOLVE_BENEATH` (and `RESOLVE_NO_MAGICLINKS`) from the folder's descriptor,
//! through rustix (already in the tree; a safe wrapper over the system call). A link that stays
//! inside is followed; one that leads out, at any step, fails with `EXDEV`, said here as a
//! permission refused in words. Renames, removals and new folders act from a descriptor of their
//! parent folder opened the same way, on the last name only, which they never follow.
//!
//! `openat2` is Linux's, from 5.6 (2020): on an older kernel [`confine`] fails, and the daemon
//! refuses to run jobs rather than run them unconfined. cap-std does the same and more (a walk step
//! by step where `openat2` is missing, other systems), for five more crates; the jobs library needs
//! these seven calls on Linux only.
//!
//! Unconfined (the commands: `solve --output ~/answers.txt` writes where it is told), each call is
//! its `std::fs` namesake.

use std::fs::{File, Metadata};
use std::io::{self, Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

/// The folder a daemon's jobs are kept inside, once confined.
static ROOT: OnceLock<Root> = OnceLock::new();

struct Root {
    /// The folder as the daemon names it (its jobs' paths begin so), and as it really is.
    named: PathBuf,
    real: PathBuf,
    dir: OwnedFd,
}

/// How a file is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// To read.
    Read,
    /// To write, made or emptied.
    Create,
    /// To write, as it is (an answers file resumed).
    Write,
    /// To read and write, as it is (a Parquet file resumed).
    ReadWrite,
    /// To write, made if missing, never emptied (a lock file).
    Lock,
}

/// From now on, this process's jobs library touches no file outside `dir`: the daemon's board,
/// for `--jobs-dir`. Fails when `dir` cannot be opened or the kernel has no `openat2`; a second
/// call for another folder fails too (one daemon, one folder).
pub fn confine(dir: &Path) -> io::Result<()> {
    let real = dir.canonicalize()?;
    let opened = rustix::fs::open(
        &real,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // The kernel must resolve beneath it: tried once here, on the folder itself.
    openat2(
        &opened,
        Path::new("."),
        OFlags::PATH | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot keep jobs inside {}: this kernel cannot open files beneath a folder \
                     (openat2, Linux 5.6 and later): {e}",
                dir.display()
            ),
        )
    })?;
    let root = Root {
        named: dir.to_path_buf(),
        real: real.clone(),
        dir: opened,
    };
    match ROOT.set(root) {
        Ok(()) => Ok(()),
        Err(_) if ROOT.get().is_some_and(|root| root.real == real) => Ok(()),
        Err(_) => Err(io::Error::other(format!(
            "this process keeps its jobs inside {} already",
            ROOT.get()
                .map_or_else(String::new, |r| r.named.display().to_string())
        ))),
    }
}

/// Opens the file at `path` as `how` says.
pub fn open(path: &Path, how: How) -> io::Result<File> {
    match beneath(path)? {
        None => {
            let mut options = std::fs::OpenOptions::new();
            match how {
                How::Read => options.read(true),
                How::Create => options.write(true).create(true).truncate(true),
                How::Write => options.write(true),
                How::ReadWrite => options.read(true).write(true),
                How::Lock => options.write(true).create(true).truncate(false),
            };
            options.open(path)
        }
        Some((root, rel)) => {
            let flags = match how {
                How::Read => OFlags::RDONLY,
                How::Create => OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC,
                How::Write => OFlags::WRONLY,
                How::ReadWrite => OFlags::RDWR,
                How::Lock => OFlags::WRONLY | OFlags::CREATE,
            };
            // openat2 takes a mode only where a file may be made.
            let mode = match flags.contains(OFlags::CREATE) {
                true => Mode::from_raw_mode(0o666),
                false => Mode::empty(),
            };
            Ok(File::from(
                openat2(&root.dir, &rel, flags, mode).map_err(|e| said(e, root))?,
            ))
        }
    }
}

/// The metadata of what `path` names (a link followed, inside the folder), without opening it
/// for reading: a FIFO is looked at, not waited on.
pub fn metadata(path: &Path) -> io::Result<Metadata> {
    match beneath(path)? {
        None => std::fs::metadata(path),
        Some((root, rel)) => {
            let fd =
                openat2(&root.dir, &rel, OFlags::PATH, Mode::empty()).map_err(|e| said(e, root))?;
            File::from(fd).metadata()
        }
    }
}

/// The whole of the file at `path`.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open(path, How::Read)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `bytes` as the whole of the file at `path`.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    open(path, How::Create)?.write_all(bytes)
}

/// Renames `from` to `to` (in one folder, or two of the same file system).
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    match (beneath(from)?, beneath(to)?) {
        (Some((root, from_rel)), Some((_, to_rel))) => {
            let (from_dir, from_name) = parent(root, &from_rel, from)?;
            let (to_dir, to_name) = parent(root, &to_rel, to)?;
            rustix::fs::renameat(&from_dir, from_name, &to_dir, to_name).map_err(io::Error::from)
        }
        _ => std::fs::rename(from, to),
    }
}

/// Removes the file at `path` (a link itself, not what it leads to).
pub fn remove_file(path: &Path) -> io::Result<()> {
    match beneath(path)? {
        None => std::fs::remove_file(path),
        Some((root, rel)) => {
            let (dir, name) = parent(root, &rel, path)?;
            rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(io::Error::from)
        }
    }
}

/// Makes the folder `path` and those on the way to it that are missing.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let Some((root, rel)) = beneath(path)? else {
        return std::fs::create_dir_all(path);
    };
    let mut so_far = PathBuf::new();
    for component in rel.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let dir = match so_far.as_os_str().is_empty() {
            true => openat2(
                &root.dir,
                Path::new("."),
                OFlags::PATH | OFlags::DIRECTORY,
                Mode::empty(),
            ),
            false => openat2(
                &root.dir,
                &so_far,
                OFlags::PATH | OFlags::DIRECTORY,
                Mode::empty(),
            ),
        }
        .map_err(|e| said(e, root))?;
        match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(said(e.into(), root)),
        }
        so_far.push(name);
    }
    Ok(())
}

/// Where `path` lies under the folder, when this process is confined: the folder and the path
/// from it. A path elsewhere is refused.
fn beneath(path: &Path) -> io::Result<Option<(&'static Root, PathBuf)>> {
    let Some(root) = ROOT.get() else {
        return Ok(None);
    };
    let rel = path
        .strip_prefix(&root.named)
        .or_else(|_| path.strip_prefix(&root.real))
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "not inside the daemon's --jobs-dir {} ({} is not under it)",
                    root.named.display(),
                    path.display()
                ),
            )
        })?;
    let rel = match rel.as_os_str().is_empty() {
        true => PathBuf::from("."),
        false => rel.to_path_buf(),
    };
    Ok(Some((root, rel)))
}

/// The folder that holds `rel` (opened beneath the root) and its last name.
fn parent<'a>(
    root: &Root,
    rel: &'a Path,
    path: &Path,
) -> io::Result<(OwnedFd, &'a std::ffi::OsStr)> {
    let name = rel.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let folder = match rel.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let dir = openat2(
        &root.dir,
        folder,
        OFlags::PATH | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .map_err(|e| said(e, root))?;
    Ok((dir, name))
}

fn openat2(dir: &OwnedFd, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    // A signal may interrupt it; EAGAIN is the kernel asking for a retry after a rename raced it.
    loop {
        match rustix::fs::openat2(dir, rel, flags | OFlags::CLOEXEC, mode, resolve) {
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            done => return done.map_err(io::Error::from),
        }
    }
}

/// The kernel's refusal to leave the folder, in words (the caller names the path); other errors
/// as they are.
fn said(e: io::Error, root: &Root) -> io::Error {
    match e.raw_os_error() {
        Some(code) if code == rustix::io::Errno::XDEV.raw_os_error() => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a link leads outside the daemon's --jobs-dir {}",
                root.named.display()
            ),
        ),
        Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a link in the daemon's --jobs-dir {} leads where patience does not follow",
                root.named.display()
            ),
        ),
        _ => e,
    }
}
