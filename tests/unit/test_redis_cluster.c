/* Tests for curate/dedup/redis_cluster: key slots, redirect parsing, CLUSTER SLOTS replies
 * (parsed from RESP bytes with hiredis' reader, as they come off the wire). */
#include "tests/harness.h"

#include "core/err.h"
#include "curate/dedup/redis_cluster.h"
#include "curate/dedup/redis_lock.h"
#include "curate/dedup/redis_watch.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>

TEST(redis_key_slots)
{
    CHECK_EQ_INT(redis_crc16("123456789", 9), 0x31C3); /* the CRC16-XMODEM check value */
    CHECK_EQ_INT(redis_key_slot("foo", 3), 12182);    /* CLUSTER KEYSLOT foo */
    CHECK_EQ_INT(redis_key_slot("{user1000}.following", 20),
                 redis_key_slot("{user1000}.followers", 20));
    CHECK_EQ_INT(redis_key_slot("{user1000}.following", 20), redis_key_slot("user1000", 8));
    CHECK_EQ_INT(redis_key_slot("{}.x", 4), redis_crc16("{}.x", 4) & 16383); /* empty tag */
}

TEST(redis_redirects)
{
    unsigned slot;
    char host[64];
    int port;
    CHECK_EQ_INT(redis_parse_redirect("MOVED 3999 127.0.0.1:6381", 25, &slot, host, sizeof(host), &port), 1);
    CHECK_EQ_INT(slot, 3999);
    CHECK_EQ_STR(host, "127.0.0.1");
    CHECK_EQ_INT(port, 6381);
    CHECK_EQ_INT(redis_parse_redirect("ASK 12 ::1:7000", 15, &slot, host, sizeof(host), &port), 2);
    CHECK_EQ_STR(host, "::1");
    CHECK_EQ_INT(redis_parse_redirect("MOVED 99999 h:1", 15, &slot, host, sizeof(host), &port), 0);
    CHECK_EQ_INT(redis_parse_redirect("MOVED 1 h:0", 11, &slot, host, sizeof(host), &port), 0);
    CHECK_EQ_INT(redis_parse_redirect("ERR wrong", 9, &slot, host, sizeof(host), &port), 0);
}

static redisReply *parse_resp(const char *bytes)
{
    redisReader *r = redisReaderCreate();
    redisReaderFeed(r, bytes, strlen(bytes));
    void *reply = NULL;
    if (redisReaderGetReply(r, &reply) != REDIS_OK)
        reply = NULL;
    redisReaderFree(r);
    return reply;
}

TEST(redis_cluster_slots_reply)
{
    /* two ranges: 0-5460 on :7000 (one replica), 5461-16383 on "" (the answering node) */
    redisReply *r = parse_resp("*2\r\n"
                               "*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                               "*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nid\r\n"
                               "*3\r\n:5461\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n");
    REQUIRE(r);
    struct rc_topology t;
    CHECK_EQ_INT(redis_parse_slots(r, "10.0.0.9", &t), 0);
    CHECK_EQ_INT(t.n, 3); /* the replica is a node too, owning no slot */
    CHECK_EQ_INT(t.nodes[t.owner[0]].port, 7000);
    CHECK_EQ_INT(t.nodes[t.owner[0]].replicas, 1);
    CHECK_EQ_INT(t.nodes[t.owner[0]].replica_of, -1);
    CHECK_EQ_INT(t.nodes[1].port, 7003);
    CHECK_EQ_INT(t.nodes[1].replica_of, t.owner[0]);
    CHECK_EQ_STR(t.nodes[t.owner[16383]].host, "10.0.0.9");
    for (int s = 0; s < RC_SLOTS; s++)
        CHECK(t.owner[s] != 1);
    free(t.nodes);
    freeReplyObject(r);
    /* malformed: a slot range out of bounds, and a master without a port */
    r = parse_resp("*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n");
    CHECK_EQ_INT(redis_parse_slots(r, "x", &t), SL_ERR_FORMAT);
    free(t.nodes);
    freeReplyObject(r);
    r = parse_resp("*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\nh\r\n");
    CHECK_EQ_INT(redis_parse_slots(r, "x", &t), SL_ERR_FORMAT);
    free(t.nodes);
    freeReplyObject(r);
    /* a cluster with no slots yet: an empty array, every slot unassigned */
    r = parse_resp("*0\r\n");
    CHECK_EQ_INT(redis_parse_slots(r, "x", &t), 0);
    CHECK_EQ_INT(t.owner[100], -1);
    free(t.nodes);
    freeReplyObject(r);
}

TEST(redis_cluster_open_refused)
{
    struct redis_cluster *rc;
    /* port 1 on loopback: nothing listens there */
    CHECK_EQ_INT(redis_cluster_open(&rc, "127.0.0.1:1", NULL, 100, 1), SL_ERR_NET);
    CHECK_CONTAINS(sl_err_msg(), "cannot reach any Redis Cluster node: 127.0.0.1:1");
    CHECK_EQ_INT(redis_cluster_open(&rc, "localhost", NULL, 100, 1), SL_ERR_USAGE);
    CHECK_CONTAINS(sl_err_msg(), "write HOST:PORT");
}

TEST(redis_info_fields)
{
    /* the shape of INFO: "# Section" headers, "field:value" lines ending in CRLF */
    const char *info = "# Server\r\nredis_version:7.0.15\r\nrun_id:0123abcd\r\n\r\n"
                       "# Stats\r\nevicted_keys:17\r\nevicted_clients:0\r\n";
    char v[48];
    CHECK_EQ_INT(redis_info_field(info, strlen(info), "run_id", v, sizeof(v)), 0);
    CHECK_EQ_STR(v, "0123abcd");
    CHECK_EQ_INT(redis_info_field(info, strlen(info), "evicted_keys", v, sizeof(v)), 0);
    CHECK_EQ_STR(v, "17");
    /* a field is a whole name at the start of a line */
    CHECK_EQ_INT(redis_info_field(info, strlen(info), "evicted", v, sizeof(v)), -1);
    CHECK_EQ_INT(redis_info_field(info, strlen(info), "id", v, sizeof(v)), -1);
    /* a value is cut to the buffer */
    CHECK_EQ_INT(redis_info_field(info, strlen(info), "redis_version", v, 4), 0);
    CHECK_EQ_STR(v, "7.0");
}

TEST(redis_lock_holders)
{
    char d[128];
    redis_lock_describe("host=n1 pid=42 start=99 ns=pid:[4026531836] started=2025-01-02T03:04:05Z",
                        d, sizeof(d));
    CHECK_EQ_STR(d, "host n1, pid 42, started 2025-01-02T03:04:05Z");
    redis_lock_describe("something else", d, sizeof(d));
    CHECK_EQ_STR(d, "host ?, pid ?, started ?");
}
