//! A run as Arrow column buffers (qid, docid, rank, score; one row per hit, queries in run order,
//! hits in rank order, rank from 1): what the Python layer wraps into a pyarrow Table without a
//! Python object per row.

use crate::runs::Run;

/// Little-endian Arrow buffers: string columns as offsets + data (32-bit offsets when the data of
/// both fit, else 64-bit: `large`), ranks as int64, scores as float64.
pub struct RunBuffers {
    pub qid_offsets: Vec<u8>,
    pub qid_data: Vec<u8>,
    pub docid_offsets: Vec<u8>,
    pub docid_data: Vec<u8>,
    pub ranks: Vec<u8>,
    pub scores: Vec<u8>,
    pub large: bool,
}

impl RunBuffers {
    /// The six buffers in the order `fanfuse.tables` wraps them: qid offsets and data, docid offsets
    /// and data, ranks, scores.
    #[must_use]
    pub fn in_order(&self) -> [&[u8]; 6] {
        [&self.qid_offsets, &self.qid_data, &self.docid_offsets, &self.docid_data, &self.ranks, &self.scores]
    }
}

#[must_use]
pub fn run_buffers(run: &Run) -> RunBuffers {
    let rows: usize = run.queries.iter().map(|q| q.hits.len()).sum();
    let qid_bytes: usize = run.queries.iter().map(|q| q.qid.len() * q.hits.len()).sum();
    let docid_bytes: usize = run.queries.iter().flat_map(|q| &q.hits).map(|h| h.docid.len()).sum();
    let large = qid_bytes.max(docid_bytes) > i32::MAX as usize;
    let width = if large { 8 } else { 4 };
    let mut buffers = RunBuffers {
        qid_offsets: Vec::with_capacity((rows + 1) * width),
        qid_data: Vec::with_capacity(qid_bytes),
        docid_offsets: Vec::with_capacity((rows + 1) * width),
        docid_data: Vec::with_capacity(docid_bytes),
        ranks: Vec::with_capacity(rows * 8),
        scores: Vec::with_capacity(rows * 8),
        large,
    };
    // `large` is chosen so that every offset fits its width.
    let push_offset = |offsets: &mut Vec<u8>, at: usize| {
        if large {
            offsets.extend_from_slice(&i64::try_from(at).unwrap_or(i64::MAX).to_le_bytes());
        } else {
            offsets.extend_from_slice(&i32::try_from(at).unwrap_or(i32::MAX).to_le_bytes());
        }
    };
    push_offset(&mut buffers.qid_offsets, 0);
    push_offset(&mut buffers.docid_offsets, 0);
    for query in &run.queries {
        for (i, hit) in query.hits.iter().enumerate() {
            buffers.qid_data.extend_from_slice(query.qid.as_bytes());
            push_offset(&mut buffers.qid_offsets, buffers.qid_data.len());
            buffers.docid_data.extend_from_slice(hit.docid.as_bytes());
            push_offset(&mut buffers.docid_offsets, buffers.docid_data.len());
            buffers.ranks.extend_from_slice(&(i64::try_from(i).unwrap_or(i64::MAX) + 1).to_le_bytes());
            buffers.scores.extend_from_slice(&hit.score.to_le_bytes());
        }
    }
    buffers
}
