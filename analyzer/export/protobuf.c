#include "export/protobuf.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

void churn_pb_free(churn_pb *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

void churn_pb_clear(churn_pb *b)
{
    b->len = 0;
}

void churn_pb_varint(churn_pb *b, uint64_t v)
{
    churn_reserve(&b->data, &b->cap, b->len + 10, 1);
    while (v >= 0x80) {
        b->data[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->data[b->len++] = (uint8_t)v;
}

void churn_pb_uint(churn_pb *b, unsigned field, uint64_t v)
{
    if (!v)
        return;
    churn_pb_varint(b, (uint64_t)field << 3 | WIRE_VARINT);
    churn_pb_varint(b, v);
}

void churn_pb_bytes(churn_pb *b, unsigned field, const void *data, size_t len)
{
    churn_pb_varint(b, (uint64_t)field << 3 | WIRE_LEN);
    churn_pb_varint(b, len);
    churn_reserve(&b->data, &b->cap, b->len + len, 1);
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
}

void churn_pb_message(churn_pb *b, unsigned field, const churn_pb *msg)
{
    churn_pb_bytes(b, field, msg->data, msg->len);
}
