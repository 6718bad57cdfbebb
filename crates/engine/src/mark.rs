//! Where an item begins in an input: what framing finds (`deal/frame.rs`, the rps reader) and
//! what `--shard`, `patience index` and a resume start a game's reader from. Below both games'
//! readers and the item layer over them (`items.rs`), which all use it.

/// Where an item's step begins in an input, found by framing it (reading its lines' shapes only):
/// enough to start a reader there that reads on exactly as one that read everything before, its
/// `error:` lines naming the same item and line numbers. What `--shard` starts its readers from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    /// Where the step's first line starts, in bytes from the input's start (0 for the input's
    /// first item, whatever comes before its first line, so that a reader starting there starts
    /// as a plain one).
    pub offset: u64,
    /// Lines before `offset`, blank ones included.
    pub line: u64,
    /// The reader's own count of what came before: deals, or rps cases begun.
    pub item: u64,
    /// A case file's announced number of cases, read before its first case.
    pub count: Option<u64>,
}

/// One step of an input, framed: an item (a good or a bad one: one answer line either way), or
/// the step where the input itself fails (no line: what ends the input, said on standard error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framed {
    Item(Mark),
    Failed(Mark),
}
