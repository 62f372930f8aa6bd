/*
 * OPAE's samples that walk every device object, as they walk them (the flows of opae-sdk's
 * samples/object_api and samples/hello_events, with no filter from the command line):
 *
 *   object_walk object_api [INTERVAL_MS [ROUNDS]]
 *     Enumerates every FPGA_DEVICE (at most 4, as object_api), and for each one takes its
 *     `*perf/clock` and `*perf/fabric` objects (globbed from the token) and the fabric's
 *     `mmio_write` and `mmio_read` counters, then prints them ROUNDS times (default 9, one
 *     each INTERVAL_MS, default 1000). A device without the FME's `perf/` tree ends the
 *     program with -1 (exit status 255), as it ends object_api.
 *   object_walk hello_events
 *     Takes the first FPGA_DEVICE, opens it shared, registers for FPGA_EVENT_ERROR, injects a
 *     fatal error through the token's `errors/inject_errors` from another thread, waits for
 *     the event's fd and clears the error.
 *
 * Both first print how many device objects and how many objects of any type fpgaEnumerate
 * lists ("device objects: N", "objects: N").
 */
#include <opae/fpga.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_TOKENS 4
#define MAX_GROUP_OBJECTS 32

static void print_err(const char *what, fpga_result res)
{
	fprintf(stderr, "Error %s: %s\n", what, fpgaErrStr(res));
}

static void sleep_ms(long ms)
{
	struct timespec delay = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&delay, NULL);
}

/* Prints the counts of device objects and of every object, as a program with no filter sees
   them. */
static void count_objects(void)
{
	fpga_properties filter = NULL;
	uint32_t devices = 0, objects = 0;
	fpga_result res = fpgaGetProperties(NULL, &filter);
	if (res == FPGA_OK)
		res = fpgaPropertiesSetObjectType(filter, FPGA_DEVICE);
	if (res == FPGA_OK)
		res = fpgaEnumerate(&filter, 1, NULL, 0, &devices);
	fpgaDestroyProperties(&filter);
	if (res == FPGA_OK)
		res = fpgaEnumerate(NULL, 0, NULL, 0, &objects);
	if (res != FPGA_OK) {
		print_err("counting objects", res);
		return;
	}
	printf("device objects: %u\nobjects: %u\n", devices, objects);
}

struct counter {
	const char *name;
	fpga_object object;
	uint64_t value;
};

struct device {
	fpga_token token;
	fpga_object clock;
	fpga_object fabric;
	uint8_t bus, dev, function;
	struct counter counters[MAX_GROUP_OBJECTS];
	size_t count;
};

static void add_counter(struct device *d, const char *name)
{
	struct counter *c = &d->counters[d->count];
	if (fpgaObjectGetObject(d->fabric, name, &c->object, FPGA_OBJECT_GLOB) == FPGA_OK) {
		c->name = name;
		c->value = 0;
		d->count++;
	}
}

static int object_api(long interval_ms, int rounds)
{
	fpga_properties filter = NULL;
	fpga_token tokens[MAX_TOKENS];
	struct device devices[MAX_TOKENS];
	uint32_t num_matches = 0, i, held = 0;
	int exit_code = -1, round;
	size_t j;
	fpga_result res;

	memset(devices, 0, sizeof devices);
	res = fpgaGetProperties(NULL, &filter);
	if (res != FPGA_OK) {
		print_err("Creating fpga_properties", res);
		return -1;
	}
	res = fpgaPropertiesSetObjectType(filter, FPGA_DEVICE);
	if (res != FPGA_OK) {
		print_err("Setting ObjectType", res);
		goto out;
	}
	res = fpgaEnumerate(&filter, 1, tokens, MAX_TOKENS, &num_matches);
	if (res != FPGA_OK) {
		print_err("Enumerating for properties", res);
		goto out;
	}
	held = num_matches < MAX_TOKENS ? num_matches : MAX_TOKENS;
	for (i = 0; i < held; i++) {
		fpga_properties props = NULL;
		devices[i].token = tokens[i];
		/* object_api goes on without a clock; a missing fabric group ends it. */
		fpgaTokenGetObject(tokens[i], "*perf/clock", &devices[i].clock, FPGA_OBJECT_GLOB);
		if (fpgaGetProperties(tokens[i], &props) == FPGA_OK) {
			if (fpgaPropertiesGetBus(props, &devices[i].bus) != FPGA_OK)
				fprintf(stderr, "error reading bus\n");
			if (fpgaPropertiesGetDevice(props, &devices[i].dev) != FPGA_OK)
				fprintf(stderr, "error reading device\n");
			if (fpgaPropertiesGetFunction(props, &devices[i].function) != FPGA_OK)
				fprintf(stderr, "error reading function\n");
		}
		fpgaDestroyProperties(&props);
		if (fpgaTokenGetObject(tokens[i], "*perf/fabric", &devices[i].fabric,
				       FPGA_OBJECT_GLOB) != FPGA_OK) {
			printf("device %u (%02x:%02x.%u) has no perf/fabric\n", i, devices[i].bus,
			       devices[i].dev, devices[i].function);
			goto out;
		}
		add_counter(&devices[i], "mmio_write");
		add_counter(&devices[i], "mmio_read");
	}
	for (round = 0; round < rounds; round++) {
		for (i = 0; i < held; i++) {
			struct device *d = &devices[i];
			uint64_t clock = 0, value = 0;
			res = fpgaObjectRead64(d->clock, &clock, FPGA_OBJECT_SYNC);
			if (res != FPGA_OK) {
				print_err("Error reading clock", res);
				continue;
			}
			printf("device: %02x:%02x.%1d clock %lu: counters %zu\n", d->bus, d->dev,
			       d->function, (unsigned long)clock, d->count);
			for (j = 0; j < d->count; j++) {
				res = fpgaObjectRead64(d->counters[j].object, &value, FPGA_OBJECT_SYNC);
				if (res != FPGA_OK)
					print_err("error reading counter", res);
				else
					d->counters[j].value = value;
			}
			sleep_ms(interval_ms);
		}
	}
	exit_code = 0;
out:
	for (i = 0; i < held; i++) {
		for (j = 0; j < devices[i].count; j++)
			fpgaDestroyObject(&devices[i].counters[j].object);
		if (devices[i].fabric)
			fpgaDestroyObject(&devices[i].fabric);
		if (devices[i].clock)
			fpgaDestroyObject(&devices[i].clock);
		fpgaDestroyToken(&tokens[i]);
	}
	fpgaDestroyProperties(&filter);
	return exit_code;
}

/* hello_events' error thread: a fatal error injected through the FME, then cleared. */
static fpga_result inject(fpga_token token, uint64_t value)
{
	fpga_handle handle = NULL;
	fpga_object object = NULL;
	fpga_result res = fpgaOpen(token, &handle, FPGA_OPEN_SHARED);
	if (res != FPGA_OK)
		return res;
	res = fpgaHandleGetObject(handle, "errors/inject_errors", &object, 0);
	if (res == FPGA_OK)
		res = fpgaObjectWrite64(object, value, 0);
	if (object)
		fpgaDestroyObject(&object);
	fpgaClose(handle);
	return res;
}

static void *error_thread(void *arg)
{
	sleep_ms(200);
	printf("injecting error\n");
	fpga_result res = inject((fpga_token)arg, 0x2);
	if (res != FPGA_OK)
		print_err("setting inject error register", res);
	return NULL;
}

static int hello_events(void)
{
	fpga_properties filter = NULL;
	fpga_token token = NULL;
	fpga_handle handle = NULL;
	fpga_event_handle event = NULL;
	uint32_t num_matches = 0;
	pthread_t thread;
	struct pollfd pfd;
	fpga_result res;
	int ok = 0;

	res = fpgaGetProperties(NULL, &filter);
	if (res == FPGA_OK)
		res = fpgaPropertiesSetObjectType(filter, FPGA_DEVICE);
	if (res == FPGA_OK)
		res = fpgaEnumerate(&filter, 1, &token, 1, &num_matches);
	fpgaDestroyProperties(&filter);
	if (res != FPGA_OK || num_matches < 1) {
		print_err("finding FPGA accelerator", res);
		return 1;
	}
	res = fpgaOpen(token, &handle, FPGA_OPEN_SHARED);
	if (res == FPGA_OK)
		res = fpgaCreateEventHandle(&event);
	if (res == FPGA_OK)
		res = fpgaRegisterEvent(handle, FPGA_EVENT_ERROR, event, 0);
	if (res == FPGA_OK)
		res = fpgaGetOSObjectFromEventHandle(event, &pfd.fd);
	if (res != FPGA_OK) {
		print_err("registering an FME event", res);
		return 1;
	}
	printf("Waiting for interrupts now...\n");
	if (pthread_create(&thread, NULL, error_thread, token) != 0)
		return 1;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) == 1) {
		uint64_t count = 0;
		printf("FME Interrupt occurred\n");
		ok = read(pfd.fd, &count, sizeof count) == (ssize_t)sizeof count;
	} else {
		printf("Poll timeout occurred\n");
	}
	pthread_join(thread, NULL);
	printf("clearing error\n");
	if (inject(token, 0) != FPGA_OK)
		ok = 0;
	if (fpgaUnregisterEvent(handle, FPGA_EVENT_ERROR, event) != FPGA_OK)
		ok = 0;
	fpgaDestroyEventHandle(&event);
	fpgaClose(handle);
	fpgaDestroyToken(&token);
	if (ok)
		printf("Successfully tested Register/Unregister for FME events!\n");
	return ok ? 0 : 1;
}

int main(int argc, char *argv[])
{
	if (argc < 2) {
		fprintf(stderr, "usage: object_walk object_api [INTERVAL_MS [ROUNDS]] | hello_events\n");
		return 2;
	}
	count_objects();
	if (strcmp(argv[1], "object_api") == 0) {
		long interval = argc > 2 ? atol(argv[2]) : 1000;
		int rounds = argc > 3 ? atoi(argv[3]) : 9;
		return object_api(interval, rounds);
	}
	if (strcmp(argv[1], "hello_events") == 0)
		return hello_events();
	fprintf(stderr, "object_walk: no mode '%s'\n", argv[1]);
	return 2;
}
