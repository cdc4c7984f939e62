//! Bulk-loads a PostgreSQL store with clones of one paused session through
//! `COPY ... FROM STDIN (FORMAT binary)`: ten million in minutes, where
//! writing them run by run through the library would take hours.
//!
//! The rows are the store's own: one clone is written through the library
//! (so every table a paused session has rows in gets its rows, with the
//! store's encoding), read back with `COPY ... TO STDOUT (FORMAT binary)`,
//! and repeated under fresh ids. Ids are UUIDs of one length, so an id is
//! replaced byte for byte wherever it occurs (text columns and the JSON of
//! bytea bodies); `timestamptz` columns move one millisecond per clone, so
//! the listing orders are real orders, and the JSON's `created_at` with
//! them when its text keeps its length. Secondary indexes are dropped
//! during the load and built again after it (as a bulk load does); the
//! status counters and the planner's statistics are brought up to date.

use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::SinkExt;
use tokio_postgres::types::Type;
use tokio_postgres::Client;

/// The tables a paused session has rows in, with the column naming it.
const TABLES: &[(&str, &str)] = &[
    ("sessions", "id"),
    ("session_outputs", "session"),
    ("gate_approvers", "session"),
    ("unposted", "session"),
    ("timers", "session"),
    ("timer_marks", "session"),
    ("notifications", "session"),
    ("escalations", "session"),
    ("queued_answers", "session"),
];

/// Binary COPY's signature, flags and header extension length.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// One row read back: its fields (`None`: NULL).
struct Row {
    fields: Vec<Option<Vec<u8>>>,
}

/// The rows of `table` whose `column` is `id`, and which columns are
/// `timestamptz`.
async fn rows_of(
    client: &Client,
    table: &str,
    column: &str,
    id: &str,
) -> Result<(Vec<Row>, Vec<bool>), String> {
    let probe = client
        .prepare(&format!("SELECT * FROM {table} LIMIT 0"))
        .await
        .map_err(|e| format!("{table}: {e}"))?;
    let stamps = probe
        .columns()
        .iter()
        .map(|c| *c.type_() == Type::TIMESTAMPTZ)
        .collect::<Vec<_>>();
    let quoted = id.replace('\'', "''");
    let out = client
        .copy_out(&format!(
            "COPY (SELECT * FROM {table} WHERE {column} = '{quoted}') TO STDOUT (FORMAT binary)"
        ))
        .await
        .map_err(|e| format!("{table}: {e}"))?;
    use futures_util::TryStreamExt;
    let chunks: Vec<Bytes> = out
        .try_collect()
        .await
        .map_err(|e| format!("{table}: {e}"))?;
    let data = chunks.concat();
    Ok((parse(&data).map_err(|e| format!("{table}: {e}"))?, stamps))
}

fn take<const N: usize>(data: &[u8], at: &mut usize) -> Result<[u8; N], String> {
    let end = *at + N;
    let bytes = data
        .get(*at..end)
        .ok_or("the COPY data ended early")?
        .try_into()
        .map_err(|_| "the COPY data ended early")?;
    *at = end;
    Ok(bytes)
}

/// Parses binary COPY output into rows.
fn parse(data: &[u8]) -> Result<Vec<Row>, String> {
    if data.len() < 19 || data[..11] != HEADER[..11] {
        return Err("not binary COPY data".into());
    }
    let mut at = 15;
    let ext = u32::from_be_bytes(take::<4>(data, &mut at)?) as usize;
    at += ext;
    let mut rows = Vec::new();
    loop {
        let n = i16::from_be_bytes(take::<2>(data, &mut at)?);
        if n < 0 {
            return Ok(rows);
        }
        let mut fields = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let len = i32::from_be_bytes(take::<4>(data, &mut at)?);
            if len < 0 {
                fields.push(None);
                continue;
            }
            let end = at + len as usize;
            fields.push(Some(
                data.get(at..end)
                    .ok_or("the COPY data ended early")?
                    .to_vec(),
            ));
            at = end;
        }
        rows.push(Row { fields });
    }
}

/// Where `needle` occurs in `haystack` (non-overlapping).
fn spots(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + needle.len() <= haystack.len() {
        if &haystack[at..at + needle.len()] == needle {
            out.push(at);
            at += needle.len();
        } else {
            at += 1;
        }
    }
    out
}

/// A field of the template row and what changes per clone: the byte
/// offsets of the id and of the `created_at` text in it, or a timestamp.
enum Field {
    Null,
    Stamp(i64),
    Bytes {
        value: Vec<u8>,
        ids: Vec<usize>,
        created: Vec<usize>,
    },
}

/// Appends `clones` clones of session `template_id`'s rows (written
/// at `created`) to every table, under fresh ids; returns how many
/// sessions were added. `status` is the template's status (its counter is
/// raised).
pub async fn clone_session(
    client: &Client,
    template_id: &str,
    created: chrono::DateTime<chrono::Utc>,
    status: &str,
    clones: usize,
) -> Result<usize, String> {
    let t = Instant::now();
    let created_json = serde_json::to_string(&created).map_err(|e| e.to_string())?;
    // Secondary indexes of the big tables: dropped, built again after.
    let mut indexes = Vec::new();
    for (table, _) in TABLES {
        for row in client
            .query(
                "SELECT indexname, indexdef FROM pg_indexes \
                 WHERE schemaname = current_schema() AND tablename = $1 \
                 AND indexname NOT IN (SELECT conname FROM pg_constraint)",
                &[table],
            )
            .await
            .map_err(|e| e.to_string())?
        {
            indexes.push((row.get::<_, String>(0), row.get::<_, String>(1)));
        }
    }
    for (name, _) in &indexes {
        client
            .batch_execute(&format!("DROP INDEX {name}"))
            .await
            .map_err(|e| format!("drop {name}: {e}"))?;
    }
    let ids = (0..clones)
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect::<Vec<_>>();
    for (table, column) in TABLES {
        let (rows, stamps) = rows_of(client, table, column, template_id).await?;
        if rows.is_empty() {
            continue;
        }
        let rows = rows
            .into_iter()
            .map(|row| {
                row.fields
                    .into_iter()
                    .enumerate()
                    .map(|(i, f)| match f {
                        None => Field::Null,
                        Some(v) if stamps[i] && v.len() == 8 => Field::Stamp(i64::from_be_bytes([
                            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
                        ])),
                        Some(value) => Field::Bytes {
                            ids: spots(&value, template_id.as_bytes()),
                            created: spots(&value, created_json.as_bytes()),
                            value,
                        },
                    })
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>();
        let sink = client
            .copy_in::<_, Bytes>(&format!("COPY {table} FROM STDIN (FORMAT binary)"))
            .await
            .map_err(|e| format!("{table}: {e}"))?;
        futures_util::pin_mut!(sink);
        let mut buf = BytesMut::with_capacity(1 << 21);
        buf.put_slice(HEADER);
        for (k, id) in ids.iter().enumerate() {
            if id.len() != template_id.len() {
                return Err(format!("ids differ in length: {id} and {template_id}"));
            }
            let shift_ms = (k + 1) as i64;
            let created_k = created + chrono::TimeDelta::milliseconds(shift_ms);
            let created_k_json = serde_json::to_string(&created_k).map_err(|e| e.to_string())?;
            let stamp_text =
                (created_k_json.len() == created_json.len()).then_some(created_k_json.as_bytes());
            for row in &rows {
                buf.put_i16(row.len() as i16);
                for field in row {
                    match field {
                        Field::Null => buf.put_i32(-1),
                        Field::Stamp(micros) => {
                            buf.put_i32(8);
                            buf.put_i64(micros + shift_ms * 1000);
                        }
                        Field::Bytes {
                            value,
                            ids,
                            created,
                        } => {
                            buf.put_i32(value.len() as i32);
                            let start = buf.len();
                            buf.put_slice(value);
                            for at in ids {
                                let at = start + at;
                                buf[at..at + id.len()].copy_from_slice(id.as_bytes());
                            }
                            if let Some(text) = stamp_text {
                                for at in created {
                                    let at = start + at;
                                    buf[at..at + text.len()].copy_from_slice(text);
                                }
                            }
                        }
                    }
                }
            }
            if buf.len() >= 1 << 20 {
                sink.send(buf.split().freeze())
                    .await
                    .map_err(|e| format!("{table}: {e}"))?;
            }
            if k > 0 && k % 1_000_000 == 0 {
                eprintln!(
                    "  … {table}: {k} of {clones} copied ({:.0} s)",
                    t.elapsed().as_secs_f64()
                );
            }
        }
        buf.put_i16(-1);
        sink.send(buf.split().freeze())
            .await
            .map_err(|e| format!("{table}: {e}"))?;
        let copied = sink.finish().await.map_err(|e| format!("{table}: {e}"))?;
        eprintln!(
            "  {table}: {copied} rows copied ({:.0} s)",
            t.elapsed().as_secs_f64()
        );
    }
    client
        .batch_execute("SET maintenance_work_mem = '1GB'")
        .await
        .map_err(|e| e.to_string())?;
    for (name, def) in &indexes {
        client
            .batch_execute(def)
            .await
            .map_err(|e| format!("build {name}: {e}"))?;
        eprintln!("  index {name} built ({:.0} s)", t.elapsed().as_secs_f64());
    }
    client
        .execute(
            "UPDATE session_counts SET n = n + $1 WHERE status = $2",
            &[&(clones as i64), &status],
        )
        .await
        .map_err(|e| e.to_string())?;
    client
        .batch_execute("VACUUM ANALYZE")
        .await
        .map_err(|e| e.to_string())?;
    for (table, _) in TABLES {
        let row = client
            .query_one(
                &format!("SELECT pg_table_size('{table}'), pg_indexes_size('{table}')"),
                &[],
            )
            .await
            .map_err(|e| e.to_string())?;
        let (data, indexes): (i64, i64) = (row.get(0), row.get(1));
        if data > 8192 {
            eprintln!(
                "  {table}: {:.1} MB of rows, {:.1} MB of indexes",
                data as f64 / 1e6,
                indexes as f64 / 1e6
            );
        }
    }
    eprintln!(
        "  {clones} clones copied, indexed and analysed in {:.0} s",
        t.elapsed().as_secs_f64()
    );
    Ok(clones)
}
