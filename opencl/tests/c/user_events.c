/* User events and the commands held back behind them, on the XRT card: commands that wait
 * for an unset user event stay queued and do not run, and run in order once it is set; a
 * user event set to an error fails the commands that wait for it and only them; a blocking
 * read returns once another thread sets its event; a command of another queue waits for a
 * held-back one; clFinish and clEnqueueWaitForEvents wait for them. Prints one line per check;
 * exit 0 when all hold. An alarm ends the program if anything hangs. */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#include <CL/cl.h>
#include "checks.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIZE (1 << 20)

static cl_int status_of(cl_event event) {
    cl_int status = 99;
    clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    return status;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static int all(const unsigned char *bytes, unsigned char value) {
    for (size_t i = 0; i < SIZE; i++)
        if (bytes[i] != value) return 0;
    return 1;
}

static atomic_int callback_status = 99;

static void CL_CALLBACK on_complete(cl_event event, cl_int status, void *data) {
    (void)event;
    (void)data;
    atomic_store(&callback_status, status);
}

static void *set_after_100_ms(void *event) {
    sleep_ms(100);
    clSetUserEventStatus(*(cl_event *)event, CL_COMPLETE);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    alarm(60);
    cl_device_id card = accelhost_device(0x10ee);
    if (!card) {
        fprintf(stderr, "the accelhost platform or its XRT card is missing\n");
        return 2;
    }
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &card, NULL, NULL, &err);
    if (err != CL_SUCCESS) return 2;
    cl_command_queue queue =
        clCreateCommandQueue(context, card, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) return 2;
    cl_command_queue other = clCreateCommandQueue(context, card, 0, &err);
    if (err != CL_SUCCESS) return 2;
    cl_mem buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, SIZE, NULL, &err);
    if (err != CL_SUCCESS) return 2;
    unsigned char *data = malloc(SIZE), *back = calloc(SIZE, 1), *next = calloc(SIZE, 1);
    for (size_t i = 0; i < SIZE; i++) data[i] = (unsigned char)(i * 13 + 5);

    /* Held back until the user event is set, then run in order. */
    cl_event gate = clCreateUserEvent(context, &err);
    expect(err == CL_SUCCESS && gate != NULL, "clCreateUserEvent makes an event");
    expect(status_of(gate) == CL_SUBMITTED, "a new user event is submitted");
    cl_command_queue its_queue = (cl_command_queue)1;
    clGetEventInfo(gate, CL_EVENT_COMMAND_QUEUE, sizeof its_queue, &its_queue, NULL);
    expect(its_queue == NULL, "a user event has no queue");
    cl_event wrote = NULL, read = NULL;
    cl_int write_status = clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, SIZE, data, 1, &gate, &wrote);
    cl_int read_status = clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, SIZE, back, 0, NULL, &read);
    expect(write_status == CL_SUCCESS && read_status == CL_SUCCESS,
           "a write waiting for the user event and a read behind it are enqueued");
    clSetEventCallback(read, CL_COMPLETE, on_complete, NULL);
    sleep_ms(50);
    expect(status_of(wrote) == CL_QUEUED && status_of(read) == CL_QUEUED,
           "both stay queued while the user event is unset");
    expect(all(back, 0), "the read has not run");
    expect(atomic_load(&callback_status) == 99, "its completion callback has not run");
    expect(clSetUserEventStatus(gate, CL_COMPLETE) == CL_SUCCESS, "the user event is set complete");
    expect(clWaitForEvents(1, &read) == CL_SUCCESS, "the read finishes");
    expect(memcmp(back, data, SIZE) == 0, "the write ran before the read: the bytes came back");
    for (int i = 0; i < 500 && atomic_load(&callback_status) == 99; i++) sleep_ms(10);
    expect(atomic_load(&callback_status) == CL_COMPLETE, "the completion callback ran, with CL_COMPLETE");
    cl_ulong queued = 0, submitted = 0, ended = 0;
    clGetEventProfilingInfo(read, CL_PROFILING_COMMAND_QUEUED, sizeof queued, &queued, NULL);
    clGetEventProfilingInfo(read, CL_PROFILING_COMMAND_SUBMIT, sizeof submitted, &submitted, NULL);
    clGetEventProfilingInfo(read, CL_PROFILING_COMMAND_END, sizeof ended, &ended, NULL);
    expect(submitted >= queued + 40000000ull && ended >= submitted,
           "the read was submitted when the user event was set, 50 ms after it was queued");
    cl_ulong none = 0;
    expect(clGetEventProfilingInfo(gate, CL_PROFILING_COMMAND_QUEUED, sizeof none, &none, NULL) ==
               CL_PROFILING_INFO_NOT_AVAILABLE,
           "a user event has no profiling");

    /* A user event set to an error fails the commands that wait for it, and only them. */
    memset(back, 0, SIZE);
    cl_event broken = clCreateUserEvent(context, &err);
    cl_event failed = NULL, after = NULL;
    clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, SIZE, back, 1, &broken, &failed);
    clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, SIZE, next, 0, NULL, &after);
    expect(clSetUserEventStatus(broken, -42) == CL_SUCCESS, "a user event is set to an error");
    expect(clWaitForEvents(1, &failed) == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
           "waiting for the command behind it reports the failure");
    expect(status_of(broken) == -42, "the user event's status is its error");
    expect(status_of(failed) < 0, "the command's status is an error");
    expect(all(back, 0), "the failed command did not run");
    expect(clWaitForEvents(1, &after) == CL_SUCCESS && memcmp(next, data, SIZE) == 0,
           "the next command, which did not wait for it, ran");
    expect(clSetUserEventStatus(broken, CL_COMPLETE) == CL_INVALID_OPERATION,
           "a user event's status is set once");
    expect(clSetUserEventStatus(read, CL_COMPLETE) == CL_INVALID_EVENT,
           "only a user event's status is the application's to set");
    cl_event unset = clCreateUserEvent(context, &err);
    expect(clSetUserEventStatus(unset, CL_SUBMITTED) == CL_INVALID_VALUE,
           "a user event is set complete or to an error, nothing else");
    expect(clCreateUserEvent(NULL, &err) == NULL && err == CL_INVALID_CONTEXT,
           "a user event needs a context");

    /* A blocking read returns once another thread sets its user event. */
    memset(back, 0, SIZE);
    cl_event later = clCreateUserEvent(context, &err);
    pthread_t setter;
    pthread_create(&setter, NULL, set_after_100_ms, &later);
    cl_int blocking = clEnqueueReadBuffer(queue, buffer, CL_TRUE, 0, SIZE, back, 1, &later, NULL);
    expect(blocking == CL_SUCCESS && status_of(later) == CL_COMPLETE && memcmp(back, data, SIZE) == 0,
           "a blocking read behind a user event another thread sets returns with the bytes");
    pthread_join(setter, NULL);

    /* A command of another queue waits for a held-back one. */
    for (size_t i = 0; i < SIZE; i++) data[i] = (unsigned char)~data[i];
    memset(back, 0, SIZE);
    cl_event gate2 = clCreateUserEvent(context, &err), rewrote = NULL, across = NULL;
    clEnqueueWriteBuffer(queue, buffer, CL_FALSE, 0, SIZE, data, 1, &gate2, &rewrote);
    clEnqueueReadBuffer(other, buffer, CL_FALSE, 0, SIZE, back, 1, &rewrote, &across);
    sleep_ms(20);
    expect(status_of(across) == CL_QUEUED, "another queue's read waiting for it stays queued");
    clSetUserEventStatus(gate2, CL_COMPLETE);
    expect(clFinish(other) == CL_SUCCESS && memcmp(back, data, SIZE) == 0,
           "once it ran, the other queue's read saw its bytes");

    /* clEnqueueWaitForEvents holds later commands back, and clFinish waits for them. */
    memset(back, 0, SIZE);
    cl_event gate3 = clCreateUserEvent(context, &err);
    expect(clEnqueueWaitForEvents(queue, 1, &gate3) == CL_SUCCESS, "clEnqueueWaitForEvents");
    expect(clEnqueueWaitForEvents(queue, 0, NULL) == CL_INVALID_VALUE,
           "clEnqueueWaitForEvents needs events");
    clEnqueueReadBuffer(queue, buffer, CL_FALSE, 0, SIZE, back, 0, NULL, NULL);
    pthread_create(&setter, NULL, set_after_100_ms, &gate3);
    expect(clFinish(queue) == CL_SUCCESS && memcmp(back, data, SIZE) == 0,
           "clFinish waits for the commands held back");
    pthread_join(setter, NULL);

    cl_event events[] = {gate, wrote, read, broken, failed, after, unset, later, gate2, rewrote, across, gate3};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) clReleaseEvent(events[i]);
    clReleaseMemObject(buffer);
    clReleaseCommandQueue(other);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    free(data);
    free(back);
    free(next);
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}
