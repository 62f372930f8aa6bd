/*
 * OPAE's hash map from C, under AddressSanitizer: u64 keys and heap keys with cleanups,
 * collisions in one bucket, replacing a value, removing, a callback returning a bad bucket,
 * NULL arguments, and destroy freeing what is left (a leak fails the run).
 */
#include <opae/fpga.h>
#include <opae/hash_map.h>

#include <stdlib.h>
#include <string.h>

#include "expect.h"

static int keys_cleaned, values_cleaned;

static uint32_t string_hash(uint32_t num_buckets, uint32_t seed, void *key)
{
	uint32_t h = seed;
	for (const char *c = key; *c; c++)
		h = h * 31u + (unsigned char)*c;
	return h % num_buckets;
}

static uint32_t bad_hash(uint32_t num_buckets, uint32_t seed, void *key)
{
	(void)seed;
	(void)key;
	return num_buckets;
}

static int string_compare(void *a, void *b)
{
	return strcmp(a, b);
}

static void free_key(void *key, void *context)
{
	CHECK(context == &keys_cleaned);
	keys_cleaned++;
	free(key);
}

static void free_value(void *value, void *context)
{
	CHECK(context == &keys_cleaned);
	values_cleaned++;
	free(value);
}

static char *copy(const char *text)
{
	char *s = malloc(strlen(text) + 1);
	strcpy(s, text);
	return s;
}

int main(void)
{
	opae_hash_map map;
	void *found = NULL;
	uint64_t key;

	/* u64 keys, two buckets: many keys share one. */
	EXPECT(opae_hash_map_init(&map, 2, 0, 0, opae_u64_key_hash, opae_u64_key_compare, NULL,
				  NULL), FPGA_OK);
	CHECK(opae_hash_map_is_empty(&map));
	for (key = 0; key < 10; key++)
		EXPECT(opae_hash_map_add(&map, (void *)(uintptr_t)key, (void *)(uintptr_t)(key * 100)),
		       FPGA_OK);
	CHECK(!opae_hash_map_is_empty(&map));
	for (key = 0; key < 10; key++) {
		EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)key, &found), FPGA_OK);
		CHECK((uintptr_t)found == key * 100);
	}
	EXPECT(opae_hash_map_add(&map, (void *)(uintptr_t)4, (void *)(uintptr_t)7), FPGA_OK);
	EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)4, &found), FPGA_OK);
	CHECK((uintptr_t)found == 7);
	EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)4, NULL), FPGA_OK);
	EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)99, &found), FPGA_NOT_FOUND);
	EXPECT(opae_hash_map_remove(&map, (void *)(uintptr_t)4), FPGA_OK);
	EXPECT(opae_hash_map_remove(&map, (void *)(uintptr_t)4), FPGA_NOT_FOUND);
	EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)4, &found), FPGA_NOT_FOUND);
	EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)6, &found), FPGA_OK);
	for (key = 0; key < 10; key++)
		opae_hash_map_remove(&map, (void *)(uintptr_t)key);
	CHECK(opae_hash_map_is_empty(&map));
	EXPECT(opae_hash_map_destroy(&map), FPGA_OK);
	CHECK(map.buckets == NULL);
	CHECK(opae_hash_map_is_empty(&map));
	EXPECT(opae_hash_map_add(&map, NULL, NULL), FPGA_INVALID_PARAM);

	/* Heap keys and values with cleanups: a replaced value, a removed entry and what
	 * destroy finds are each cleaned once. */
	EXPECT(opae_hash_map_init(&map, 7, 5, 0, string_hash, string_compare, free_key,
				  free_value), FPGA_OK);
	map.cleanup_context = &keys_cleaned;
	EXPECT(opae_hash_map_add(&map, copy("afu_id"), copy("d8424dc4")), FPGA_OK);
	EXPECT(opae_hash_map_add(&map, copy("errors"), copy("0")), FPGA_OK);
	EXPECT(opae_hash_map_add(&map, copy("power"), copy("1")), FPGA_OK);
	{
		char *again = copy("errors");
		EXPECT(opae_hash_map_add(&map, again, copy("0x1")), FPGA_OK);
		CHECK(values_cleaned == 1 && keys_cleaned == 0);
		/* The map kept its own key: the new one is still the caller's. */
		free(again);
	}
	EXPECT(opae_hash_map_find(&map, "errors", &found), FPGA_OK);
	CHECK(strcmp(found, "0x1") == 0);
	EXPECT(opae_hash_map_remove(&map, "power"), FPGA_OK);
	CHECK(values_cleaned == 2 && keys_cleaned == 1);
	EXPECT(opae_hash_map_destroy(&map), FPGA_OK);
	CHECK(values_cleaned == 4 && keys_cleaned == 3);

	/* Unique keyspace: adds do not look for the key. */
	EXPECT(opae_hash_map_init(&map, 4, 0, OPAE_HASH_MAP_UNIQUE_KEYSPACE, opae_u64_key_hash,
				  opae_u64_key_compare, NULL, NULL), FPGA_OK);
	EXPECT(opae_hash_map_add(&map, (void *)(uintptr_t)1, (void *)(uintptr_t)2), FPGA_OK);
	EXPECT(opae_hash_map_find(&map, (void *)(uintptr_t)1, &found), FPGA_OK);
	EXPECT(opae_hash_map_destroy(&map), FPGA_OK);

	/* Bad arguments and callbacks. */
	EXPECT(opae_hash_map_init(NULL, 4, 0, 0, opae_u64_key_hash, opae_u64_key_compare, NULL,
				  NULL), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_init(&map, 4, 0, 0, NULL, opae_u64_key_compare, NULL, NULL),
	       FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_init(&map, 4, 0, 0, opae_u64_key_hash, NULL, NULL, NULL),
	       FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_init(&map, 0, 0, 0, opae_u64_key_hash, opae_u64_key_compare, NULL,
				  NULL), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_add(NULL, NULL, NULL), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_find(NULL, NULL, &found), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_remove(NULL, NULL), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_destroy(NULL), FPGA_INVALID_PARAM);
	CHECK(opae_hash_map_is_empty(NULL));
	EXPECT(opae_hash_map_init(&map, 4, 0, 0, bad_hash, opae_u64_key_compare, NULL, NULL),
	       FPGA_OK);
	EXPECT(opae_hash_map_add(&map, NULL, NULL), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_find(&map, NULL, &found), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_remove(&map, NULL), FPGA_INVALID_PARAM);
	EXPECT(opae_hash_map_destroy(&map), FPGA_OK);

	CHECK(opae_u64_key_compare((void *)1, (void *)2) < 0);
	CHECK(opae_u64_key_compare((void *)2, (void *)2) == 0);
	CHECK(opae_u64_key_compare((void *)3, (void *)2) > 0);
	CHECK(opae_u64_key_hash(8, 0, (void *)13) == 5);

	printf("hash_map_check: %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
