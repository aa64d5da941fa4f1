/*
 * The protocol buffers wire format, as much as writing a pprof profile needs: varints,
 * length-delimited fields and nested messages, appended to a growing byte buffer.  A message
 * is built in a buffer of its own and then added to its parent as one field.
 */
#ifndef CHURN_EXPORT_PROTOBUF_H
#define CHURN_EXPORT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct churn_pb {
    uint8_t *data;
    size_t len, cap;
} churn_pb;

void churn_pb_free(churn_pb *b);
void churn_pb_clear(churn_pb *b); /* keeps the memory for the next message */

void churn_pb_varint(churn_pb *b, uint64_t v);
/* A varint field; zero is the default and is left out, as proto3 does. */
void churn_pb_uint(churn_pb *b, unsigned field, uint64_t v);
void churn_pb_bytes(churn_pb *b, unsigned field, const void *data, size_t len);
void churn_pb_message(churn_pb *b, unsigned field, const churn_pb *msg);

#endif
