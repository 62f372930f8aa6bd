/* accelhost's OPAE-compatible C API: OPAE's chained hash map over caller-owned keys and
 * values (OPAE ships it in libopaemem; accelhost exports it from libopae-c). The caller owns
 * the opae_hash_map struct; entries and buckets belong to the map until destroyed. */
#ifndef __OPAE_HASH_MAP_H__
#define __OPAE_HASH_MAP_H__

#include <stdint.h>
#include <stdbool.h>
#include <opae/types_enum.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum _opae_hash_map_flags {
	/* The caller never adds a key twice: adds skip the collision check. */
	OPAE_HASH_MAP_UNIQUE_KEYSPACE = (1u << 0)
} opae_hash_map_flags;

typedef struct _opae_hash_map_item {
	void *key;
	void *value;
	struct _opae_hash_map_item *next;
} opae_hash_map_item;

typedef struct _opae_hash_map {
	uint32_t num_buckets;
	uint32_t hash_seed;
	opae_hash_map_item **buckets;
	int flags;
	/* The second argument of key_cleanup and value_cleanup; set it after init. */
	void *cleanup_context;
	/* Required: a bucket below num_buckets. */
	uint32_t (*key_hash)(uint32_t num_buckets, uint32_t hash_seed, void *key);
	/* Required: 0 when the keys are equal. */
	int (*key_compare)(void *keya, void *keyb);
	/* Optional: called on a removed key and value. */
	void (*key_cleanup)(void *key, void *context);
	void (*value_cleanup)(void *value, void *context);
} opae_hash_map;

/* FPGA_INVALID_PARAM for a NULL hm, key_hash or key_compare, or 0 buckets. */
fpga_result opae_hash_map_init(opae_hash_map *hm, uint32_t num_buckets, uint32_t hash_seed,
			       int flags,
			       uint32_t (*key_hash)(uint32_t num_buckets, uint32_t hash_seed,
						    void *key),
			       int (*key_compare)(void *keya, void *keyb),
			       void (*key_cleanup)(void *key, void *context),
			       void (*value_cleanup)(void *value, void *context));
/* A key already present keeps its entry and gets the new value (the old to value_cleanup). */
fpga_result opae_hash_map_add(opae_hash_map *hm, void *key, void *value);
/* FPGA_NOT_FOUND if absent; value may be NULL. */
fpga_result opae_hash_map_find(opae_hash_map *hm, void *key, void **value);
fpga_result opae_hash_map_remove(opae_hash_map *hm, void *key);
fpga_result opae_hash_map_destroy(opae_hash_map *hm);
bool opae_hash_map_is_empty(opae_hash_map *hm);

/* For keys that are 64-bit numbers cast to void *. */
uint32_t opae_u64_key_hash(uint32_t num_buckets, uint32_t hash_seed, void *key);
int opae_u64_key_compare(void *keya, void *keyb);

#ifdef __cplusplus
}
#endif

#endif /* __OPAE_HASH_MAP_H__ */
