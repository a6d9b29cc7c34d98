/* The numbers of the Parquet file format that a reader and a writer share: the enums of
 * the format's Thrift definition (parquet.thrift in the apache/parquet-format
 * specification) and the field ids of the structs sluice reads or writes. Every value
 * here is fixed by the specification; none is a choice of sluice.
 *
 * A Parquet file is "PAR1", column chunks (pages, each behind a Thrift PageHeader), the
 * footer (a Thrift FileMetaData in the compact protocol), its length (4 bytes, little
 * endian) and "PAR1" again.
 */
#ifndef SL_PARQUET_FORMAT_H
#define SL_PARQUET_FORMAT_H

/* The magic at both ends of a file, and the footer's length field after the metadata. */
#define SL_PQ_MAGIC "PAR1"
#define SL_PQ_MAGIC_LEN 4
#define SL_PQ_FOOTER_LEN_BYTES 4

/* enum Type: the physical types */
enum sl_pq_type {
    SL_PQ_BOOLEAN = 0,
    SL_PQ_INT32 = 1,
    SL_PQ_INT64 = 2,
    SL_PQ_INT96 = 3, /* deprecated timestamps: 8 bytes nanoseconds of day, 4 bytes Julian day */
    SL_PQ_FLOAT = 4,
    SL_PQ_DOUBLE = 5,
    SL_PQ_BYTE_ARRAY = 6,
    SL_PQ_FIXED_LEN_BYTE_ARRAY = 7,
};

/* enum ConvertedType: the older annotations (LogicalType, field 10 of SchemaElement, is
 * the newer one; writers set both where both exist) */
enum sl_pq_converted {
    SL_PQ_CT_UTF8 = 0,
    SL_PQ_CT_MAP = 1,
    SL_PQ_CT_MAP_KEY_VALUE = 2,
    SL_PQ_CT_LIST = 3,
    SL_PQ_CT_ENUM = 4,
    SL_PQ_CT_DECIMAL = 5,
    SL_PQ_CT_DATE = 6,
    SL_PQ_CT_TIME_MILLIS = 7,
    SL_PQ_CT_TIME_MICROS = 8,
    SL_PQ_CT_TIMESTAMP_MILLIS = 9,
    SL_PQ_CT_TIMESTAMP_MICROS = 10,
    SL_PQ_CT_UINT_8 = 11,
    SL_PQ_CT_UINT_16 = 12,
    SL_PQ_CT_UINT_32 = 13,
    SL_PQ_CT_UINT_64 = 14,
    SL_PQ_CT_INT_8 = 15,
    SL_PQ_CT_INT_16 = 16,
    SL_PQ_CT_INT_32 = 17,
    SL_PQ_CT_INT_64 = 18,
    SL_PQ_CT_JSON = 19,
    SL_PQ_CT_BSON = 20,
    SL_PQ_CT_INTERVAL = 21,
};

/* enum FieldRepetitionType */
enum sl_pq_repetition {
    SL_PQ_REQUIRED = 0,
    SL_PQ_OPTIONAL = 1,
    SL_PQ_REPEATED = 2,
};

/* enum Encoding (1, GROUP_VAR_INT, was never used) */
enum sl_pq_encoding {
    SL_PQ_PLAIN = 0,
    SL_PQ_PLAIN_DICTIONARY = 2, /* a dictionary page PLAIN, data pages RLE_DICTIONARY (v1) */
    SL_PQ_RLE = 3,              /* the RLE/bit-packing hybrid: levels, booleans (v2) */
    SL_PQ_BIT_PACKED = 4,       /* deprecated levels encoding */
    SL_PQ_DELTA_BINARY_PACKED = 5,
    SL_PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
    SL_PQ_DELTA_BYTE_ARRAY = 7,
    SL_PQ_RLE_DICTIONARY = 8,
    SL_PQ_BYTE_STREAM_SPLIT = 9,
};

/* enum CompressionCodec (LZ4, 5, is the Hadoop framing; LZ4_RAW, 7, the plain block) */
enum sl_pq_codec {
    SL_PQ_UNCOMPRESSED = 0,
    SL_PQ_SNAPPY = 1,
    SL_PQ_GZIP = 2,
    SL_PQ_LZO = 3,
    SL_PQ_BROTLI = 4,
    SL_PQ_LZ4 = 5,
    SL_PQ_ZSTD = 6,
    SL_PQ_LZ4_RAW = 7,
};

/* enum PageType */
enum sl_pq_page_type {
    SL_PQ_DATA_PAGE = 0,
    SL_PQ_INDEX_PAGE = 1,
    SL_PQ_DICTIONARY_PAGE = 2,
    SL_PQ_DATA_PAGE_V2 = 3,
};

/* Field ids of the Thrift structs (compact protocol field headers carry these). */

/* struct FileMetaData */
enum {
    SL_PQ_FMD_VERSION = 1,    /* i32 */
    SL_PQ_FMD_SCHEMA = 2,     /* list<SchemaElement>, depth first, the root first */
    SL_PQ_FMD_NUM_ROWS = 3,   /* i64 */
    SL_PQ_FMD_ROW_GROUPS = 4, /* list<RowGroup> */
    SL_PQ_FMD_KV_META = 5,    /* list<KeyValue> */
    SL_PQ_FMD_CREATED_BY = 6, /* string */
};

/* struct KeyValue */
enum {
    SL_PQ_KV_KEY = 1,   /* string */
    SL_PQ_KV_VALUE = 2, /* string */
};

/* struct SchemaElement */
enum {
    SL_PQ_SE_TYPE = 1,         /* Type, absent for a group */
    SL_PQ_SE_TYPE_LENGTH = 2,  /* i32, FIXED_LEN_BYTE_ARRAY */
    SL_PQ_SE_REPETITION = 3,   /* FieldRepetitionType, absent for the root */
    SL_PQ_SE_NAME = 4,         /* string */
    SL_PQ_SE_NUM_CHILDREN = 5, /* i32, set for a group */
    SL_PQ_SE_CONVERTED = 6,    /* ConvertedType */
    SL_PQ_SE_SCALE = 7,        /* i32, DECIMAL */
    SL_PQ_SE_PRECISION = 8,    /* i32, DECIMAL */
    SL_PQ_SE_FIELD_ID = 9,     /* i32 */
    SL_PQ_SE_LOGICAL = 10,     /* LogicalType (a union) */
};

/* union LogicalType: the field id says which annotation it is */
enum {
    SL_PQ_LT_STRING = 1,
    SL_PQ_LT_MAP = 2,
    SL_PQ_LT_LIST = 3,
    SL_PQ_LT_ENUM = 4,
    SL_PQ_LT_DECIMAL = 5,
    SL_PQ_LT_DATE = 6,
    SL_PQ_LT_TIME = 7,
    SL_PQ_LT_TIMESTAMP = 8,
    SL_PQ_LT_INTEGER = 10,
    SL_PQ_LT_UNKNOWN = 11, /* always null */
    SL_PQ_LT_JSON = 12,
    SL_PQ_LT_BSON = 13,
    SL_PQ_LT_UUID = 14,
    SL_PQ_LT_FLOAT16 = 15,
};

/* struct RowGroup */
enum {
    SL_PQ_RG_COLUMNS = 1,          /* list<ColumnChunk>, one per leaf of the schema */
    SL_PQ_RG_TOTAL_BYTE_SIZE = 2,  /* i64, uncompressed */
    SL_PQ_RG_NUM_ROWS = 3,         /* i64 */
    SL_PQ_RG_FILE_OFFSET = 5,      /* i64 */
    SL_PQ_RG_TOTAL_COMPRESSED = 6, /* i64 */
    SL_PQ_RG_ORDINAL = 7,          /* i16 */
};

/* struct ColumnChunk */
enum {
    SL_PQ_CC_FILE_PATH = 1,   /* string: the chunk is in another file (not supported) */
    SL_PQ_CC_FILE_OFFSET = 2, /* i64, deprecated */
    SL_PQ_CC_META_DATA = 3,   /* ColumnMetaData */
};

/* struct ColumnMetaData */
enum {
    SL_PQ_CMD_TYPE = 1,              /* Type */
    SL_PQ_CMD_ENCODINGS = 2,         /* list<Encoding> */
    SL_PQ_CMD_PATH = 3,              /* list<string>: the leaf's path in the schema */
    SL_PQ_CMD_CODEC = 4,             /* CompressionCodec */
    SL_PQ_CMD_NUM_VALUES = 5,        /* i64, nulls included */
    SL_PQ_CMD_UNCOMPRESSED_SIZE = 6, /* i64, page headers included */
    SL_PQ_CMD_COMPRESSED_SIZE = 7,   /* i64, page headers included */
    SL_PQ_CMD_KV_META = 8,           /* list<KeyValue> */
    SL_PQ_CMD_DATA_PAGE_OFFSET = 9,  /* i64 */
    SL_PQ_CMD_INDEX_PAGE_OFFSET = 10,
    SL_PQ_CMD_DICT_PAGE_OFFSET = 11, /* i64, when the chunk has a dictionary */
    SL_PQ_CMD_STATISTICS = 12,
    SL_PQ_CMD_ENCODING_STATS = 13,
};

/* struct PageHeader */
enum {
    SL_PQ_PH_TYPE = 1,              /* PageType */
    SL_PQ_PH_UNCOMPRESSED_SIZE = 2, /* i32 */
    SL_PQ_PH_COMPRESSED_SIZE = 3,   /* i32 */
    SL_PQ_PH_CRC = 4,               /* i32, CRC-32 of the compressed page */
    SL_PQ_PH_DATA = 5,              /* DataPageHeader */
    SL_PQ_PH_INDEX = 6,
    SL_PQ_PH_DICT = 7,    /* DictionaryPageHeader */
    SL_PQ_PH_DATA_V2 = 8, /* DataPageHeaderV2 */
};

/* struct DataPageHeader (v1: levels then values, all compressed together) */
enum {
    SL_PQ_DP_NUM_VALUES = 1,    /* i32, nulls included */
    SL_PQ_DP_ENCODING = 2,      /* Encoding of the values */
    SL_PQ_DP_DEF_ENCODING = 3,  /* Encoding of the definition levels (RLE) */
    SL_PQ_DP_REP_ENCODING = 4,  /* Encoding of the repetition levels (RLE) */
    SL_PQ_DP_STATISTICS = 5,
};

/* struct DictionaryPageHeader */
enum {
    SL_PQ_DICT_NUM_VALUES = 1, /* i32 */
    SL_PQ_DICT_ENCODING = 2,   /* PLAIN or PLAIN_DICTIONARY: both mean PLAIN here */
    SL_PQ_DICT_IS_SORTED = 3,  /* bool */
};

/* struct DataPageHeaderV2 (levels uncompressed and without length prefixes, first) */
enum {
    SL_PQ_DP2_NUM_VALUES = 1,   /* i32 */
    SL_PQ_DP2_NUM_NULLS = 2,    /* i32 */
    SL_PQ_DP2_NUM_ROWS = 3,     /* i32 */
    SL_PQ_DP2_ENCODING = 4,     /* Encoding */
    SL_PQ_DP2_DEF_LEN = 5,      /* i32: bytes of definition levels */
    SL_PQ_DP2_REP_LEN = 6,      /* i32: bytes of repetition levels */
    SL_PQ_DP2_IS_COMPRESSED = 7, /* bool, true when absent */
    SL_PQ_DP2_STATISTICS = 8,
};

/* Thrift compact protocol: the type nibble of a field header or list header. */
enum sl_thrift_ctype {
    SL_TC_STOP = 0,
    SL_TC_TRUE = 1, /* a bool field's value is in its header */
    SL_TC_FALSE = 2,
    SL_TC_BYTE = 3,
    SL_TC_I16 = 4,
    SL_TC_I32 = 5,
    SL_TC_I64 = 6,
    SL_TC_DOUBLE = 7,
    SL_TC_BINARY = 8, /* strings too */
    SL_TC_LIST = 9,
    SL_TC_SET = 10,
    SL_TC_MAP = 11,
    SL_TC_STRUCT = 12,
};

#endif
