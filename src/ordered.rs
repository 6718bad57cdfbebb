//! The one pipeline that puts answers in input order, for everyone who prints them: `solve` and
//! `rps` (answered by this process's pool), `client` and `rps --addr` (answered by daemons), and
//! the daemon's plain HTTP API (answered by its service). As ripgrep's searcher pushes matches
//! into a `Sink`, [`drain`] pushes each item's line, in order, into an [`AnswerSink`]: standard
//! output or a file for the commands, an HTTP body for the API.
//!
//! Whoever reads the input hands on [`Piece`]s in input order: a batch of entries (a bad item's
//! message in its place, and one [`Pending`] for the answers of the batch's good items, however
//! they are computed), a resume's skipped items, an input that could not be read. The channel of
//! pieces is bounded, so the reader runs only so far ahead of the sink, and memory stays flat
//! however large the input.

use std::future::Future;
use std::io;
use std::pin::Pin;

use futures::FutureExt as _;
use tokio::sync::mpsc;

/// The answers to a batch's good items, in order, once they are known; `None` when they will
/// never come (the daemons were given up on, the service ended the call).
pub type Pending<A> = Pin<Box<dyn Future<Output = Option<Vec<A>>> + Send>>;

/// What the reader hands on, in input order.
pub enum Piece<A> {
    /// A batch of entries: `None` for a good item (its answer is the next of `answers`), the
    /// message of its `error:` line for a bad one; `at`, the input bytes the batch and those
    /// before it span (for progress).
    Batch {
        lines: Vec<Option<String>>,
        answers: Option<Pending<A>>,
        at: u64,
    },
    /// Items read again and not answered, since the output holds their answers (a resume): how
    /// many, how many were bad, and the bytes they span.
    Skipped { items: u64, bad: u64, at: u64 },
    /// An input that could not be read (further); its message names it.
    Unreadable(String),
}

/// The answers to come are a future: nothing worth printing.
impl<A> std::fmt::Debug for Piece<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Piece::Batch { lines, answers, at } => f
                .debug_struct("Batch")
                .field("lines", lines)
                .field("answered", &answers.is_some())
                .field("at", at)
                .finish(),
            Piece::Skipped { items, bad, at } => f
                .debug_struct("Skipped")
                .field("items", items)
                .field("bad", bad)
                .field("at", at)
                .finish(),
            Piece::Unreadable(message) => f.debug_tuple("Unreadable").field(message).finish(),
        }
    }
}

impl<A> Piece<A> {
    /// A batch of entries (an item, or a bad item's message), its good items answered by
    /// `answer` (not called when there are none).
    pub fn batch<T>(
        entries: Vec<Result<T, String>>,
        at: u64,
        answer: impl FnOnce(Vec<T>) -> Pending<A>,
    ) -> Piece<A> {
        let mut items = Vec::new();
        let lines = entries
            .into_iter()
            .map(|entry| match entry {
                Ok(item) => {
                    items.push(item);
                    None
                }
                Err(message) => Some(message),
            })
            .collect();
        let answers = (!items.is_empty()).then(|| answer(items));
        Piece::Batch { lines, answers, at }
    }
}

/// Where the lines go, in input order.
pub trait AnswerSink<A> {
    /// An item's answer.
    fn answer(&mut self, answer: A) -> io::Result<()>;
    /// A bad item's `error:` line.
    fn bad(&mut self, message: &str) -> io::Result<()>;
    /// A batch is done: `items` more lines, the input read up to `at` bytes.
    fn advance(&mut self, items: u64, at: u64);
    /// See [`Piece::Skipped`].
    fn skipped(&mut self, items: u64, bad: u64, at: u64);
    /// See [`Piece::Unreadable`].
    fn unreadable(&mut self, message: &str);
    /// Hands on the lines so far: at the end of every batch (`waiting` false), and before the
    /// pipeline waits for the reader or for answers (`waiting` true), so that whoever reads the
    /// output sees every answer there is. A sink that buffers (a file) hands on only when
    /// waiting; one that must hold little (an HTTP body) at every batch, and waits for room.
    fn flush(&mut self, waiting: bool) -> impl Future<Output = io::Result<()>> + Send;
}

/// How the pipeline ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    /// Every piece was written.
    All,
    /// A batch's answers will never come; every line before that batch was written.
    Lost,
}

/// Why the pipeline stopped short.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    /// The sink could not be written (a closed pipe, a client gone).
    #[error(transparent)]
    Write(#[from] io::Error),
    /// A batch was answered with fewer answers than it has good items.
    #[error("a batch's answers ran short")]
    Short,
}

/// Writes every piece into `sink` in input order, waiting for each batch's answers in turn.
pub async fn drain<A, S: AnswerSink<A>>(
    pieces: &mut mpsc::Receiver<Piece<A>>,
    sink: &mut S,
) -> Result<Drained, Stopped> {
    loop {
        if pieces.is_empty() {
            // About to wait for the reader (someone typing deals?): show the answers so far.
            sink.flush(true).await?;
        }
        let Some(piece) = pieces.recv().await else {
            break;
        };
        let (lines, answers, at) = match piece {
            Piece::Batch { lines, answers, at } => (lines, answers, at),
            Piece::Skipped { items, bad, at } => {
                sink.skipped(items, bad, at);
                continue;
            }
            Piece::Unreadable(message) => {
                sink.unreadable(&message);
                continue;
            }
        };
        let answers = match answers {
            None => Vec::new(),
            Some(mut pending) => {
                let ready = match (&mut pending).now_or_never() {
                    Some(ready) => ready,
                    None => {
                        // About to wait for the answers: let whoever reads see the lines so far.
                        sink.flush(true).await?;
                        pending.await
                    }
                };
                match ready {
                    Some(answers) => answers,
                    None => {
                        sink.flush(true).await?;
                        return Ok(Drained::Lost);
                    }
                }
            }
        };
        let mut answers = answers.into_iter();
        let count = lines.len() as u64;
        for line in lines {
            match line {
                Some(message) => sink.bad(&message)?,
                None => sink.answer(answers.next().ok_or(Stopped::Short)?)?,
            }
        }
        sink.advance(count, at);
        sink.flush(false).await?;
    }
    Ok(Drained::All)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    /// Records what it is told, as words.
    #[derive(Default)]
    struct Recorded {
        said: Vec<String>,
        /// Lines written and not yet flushed.
        unflushed: usize,
    }

    impl AnswerSink<u32> for Recorded {
        fn answer(&mut self, answer: u32) -> io::Result<()> {
            self.unflushed += 1;
            self.said.push(answer.to_string());
            Ok(())
        }
        fn bad(&mut self, message: &str) -> io::Result<()> {
            self.unflushed += 1;
            self.said.push(format!("error: {message}"));
            Ok(())
        }
        fn advance(&mut self, items: u64, at: u64) {
            self.said.push(format!("advance {items} to {at}"));
        }
        fn skipped(&mut self, items: u64, bad: u64, at: u64) {
            self.said
                .push(format!("skipped {items} ({bad} bad) to {at}"));
        }
        fn unreadable(&mut self, message: &str) {
            self.said.push(format!("unreadable: {message}"));
        }
        fn flush(&mut self, waiting: bool) -> impl Future<Output = io::Result<()>> + Send {
            if waiting && self.unflushed > 0 {
                self.said.push("flush".into());
                self.unflushed = 0;
            }
            std::future::ready(Ok(()))
        }
    }

    fn batch(
        entries: Vec<Result<u32, String>>,
        at: u64,
    ) -> (Piece<u32>, oneshot::Sender<Vec<u32>>) {
        let (reply, answers) = oneshot::channel();
        let piece = Piece::batch(entries, at, |_| Box::pin(async { answers.await.ok() }));
        (piece, reply)
    }

    /// Answers that come in any order print in input order, each bad item's line in its place,
    /// and the lines so far are handed on before the pipeline waits for answers.
    #[tokio::test]
    async fn answers_print_in_input_order_with_bad_items_in_their_places() {
        let (pieces_tx, mut pieces) = mpsc::channel(8);
        let (first, reply_first) = batch(vec![Ok(1), Err("bad deal 2".into()), Ok(3)], 10);
        let (second, reply_second) = batch(vec![Err("bad deal 4".into())], 20);
        let (third, reply_third) = batch(vec![Ok(5)], 30);
        for piece in [first, second, third] {
            assert!(pieces_tx.send(piece).await.is_ok());
        }
        drop(pieces_tx);
        // The last batch is answered first, then the first; the second needs no answer.
        reply_third.send(vec![50]).unwrap();
        reply_first.send(vec![10, 30]).unwrap();
        drop(reply_second);
        let mut sink = Recorded::default();
        assert_eq!(drain(&mut pieces, &mut sink).await.unwrap(), Drained::All);
        assert_eq!(
            sink.said,
            [
                "10",
                "error: bad deal 2",
                "30",
                "advance 3 to 10",
                "error: bad deal 4",
                "advance 1 to 20",
                "50",
                "advance 1 to 30",
                "flush",
            ]
        );
    }

    /// A batch whose answers never come ends the pipeline after every line before it, handed on.
    #[tokio::test]
    async fn a_lost_batch_ends_the_lines_at_its_place() {
        let (pieces_tx, mut pieces) = mpsc::channel(8);
        let (first, reply_first) = batch(vec![Ok(1)], 1);
        let (second, reply_second) = batch(vec![Ok(2)], 2);
        let (third, reply_third) = batch(vec![Ok(3)], 3);
        for piece in [
            Piece::Skipped {
                items: 4,
                bad: 1,
                at: 0,
            },
            first,
            second,
            third,
        ] {
            assert!(pieces_tx.send(piece).await.is_ok());
        }
        reply_first.send(vec![1]).unwrap();
        drop(reply_second);
        reply_third.send(vec![3]).unwrap();
        let mut sink = Recorded::default();
        assert_eq!(drain(&mut pieces, &mut sink).await.unwrap(), Drained::Lost);
        assert_eq!(
            sink.said,
            ["skipped 4 (1 bad) to 0", "1", "advance 1 to 1", "flush"]
        );
    }

    /// Fewer answers than good items is an error, not a line short.
    #[tokio::test]
    async fn a_batch_answered_short_stops_the_pipeline() {
        let (pieces_tx, mut pieces) = mpsc::channel(8);
        let (piece, reply) = batch(vec![Ok(1), Ok(2)], 1);
        assert!(pieces_tx.send(piece).await.is_ok());
        assert!(
            pieces_tx
                .send(Piece::Unreadable("gone".into()))
                .await
                .is_ok()
        );
        reply.send(vec![1]).unwrap();
        let mut sink = Recorded::default();
        let stopped = drain(&mut pieces, &mut sink).await.unwrap_err();
        assert!(matches!(stopped, Stopped::Short), "{stopped:?}");
    }
}
