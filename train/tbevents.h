/* TensorBoard event files: scalar summaries written as TFRecords of tensorflow.Event
 * protobufs, encoded here by hand (no protobuf or TensorFlow library), and read back.
 *
 * A file is a sequence of records: uint64 length (little endian), uint32 masked CRC-32C of
 * those 8 bytes, the data, uint32 masked CRC-32C of the data. The first record is an Event
 * with file_version "brain.Event:2"; each scalar is an Event {wall_time, step, summary {value
 * {tag, simple_value}}}. Layout and field numbers: docs/formats/tensorboard.md.
 */
#ifndef SL_TRAIN_TBEVENTS_H
#define SL_TRAIN_TBEVENTS_H

#include <stddef.h>
#include <stdint.h>

struct sl_buf;

/* The TFRecord checksum: CRC-32C rotated right by 15 bits plus 0xa282ead8. */
uint32_t tb_masked_crc(const void *data, size_t n);

/* Append one framed record holding data[0..n) to out. */
int tb_record_append(struct sl_buf *out, const void *data, size_t n);

/* Append an Event protobuf: the file-version event / one scalar / a SessionLog START (which
 * tells TensorBoard to drop events at or after `step` from earlier files: a restart). */
int tb_event_file_version(struct sl_buf *out, double wall_time);
int tb_event_scalar(struct sl_buf *out, double wall_time, int64_t step, const char *tag,
                    float value);
int tb_event_session_start(struct sl_buf *out, double wall_time, int64_t step);

/* Parse a buffer of records, calling fn for every scalar value. Stops without error at a
 * truncated last record (a run killed mid-write). A bad checksum or a malformed event is
 * SL_ERR_CORRUPT (with the offset); fn returning non-zero stops with that value. *start
 * steps (SessionLog START) are reported with tag NULL. */
typedef int (*tb_scalar_fn)(void *ctx, const char *tag, int64_t step, double wall_time,
                            float value);
int tb_parse(const void *data, size_t n, tb_scalar_fn fn, void *ctx);

/* A writer of one new event file in dir (created): events.out.tfevents.<unix time>.<host>
 * (with .<pid> appended if that name exists). Every call writes whole records and flushes,
 * so a crashed run leaves a readable file. */
struct tb_writer;
int tb_writer_open(struct tb_writer **out, const char *dir);
int tb_writer_scalar(struct tb_writer *w, int64_t step, const char *tag, float value);
int tb_writer_session_start(struct tb_writer *w, int64_t step);
const char *tb_writer_path(const struct tb_writer *w);
/* Close; 0 or the error of the final flush. NULL is a no-op. */
int tb_writer_close(struct tb_writer *w);

/* Read every event file (events.out.tfevents.*) of dir in name order (= creation time),
 * calling fn for each scalar. A missing dir has no events (0). */
int tb_read_dir(const char *dir, tb_scalar_fn fn, void *ctx);

#endif
