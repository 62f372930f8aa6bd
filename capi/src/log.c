/*
 * OPAE's opae_print, which stable Rust cannot define (it is variadic): the message goes out
 * when its level is at most LIBOPAE_LOG's (default 0, errors only), errors to stderr and the
 * rest to LIBOPAE_LOGFILE (a relative path or one under /tmp/, as OPAE allows) or stdout, one
 * message at a time. The library exports it as opae_print through a jump (src/log.rs).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_level;
static FILE *log_file;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_init(void)
{
	const char *level = getenv("LIBOPAE_LOG");
	const char *file = getenv("LIBOPAE_LOGFILE");

	if (level)
		log_level = atoi(level);
	if (file && (file[0] != '/' || strncmp(file, "/tmp/", 5) == 0)) {
		log_file = fopen(file, "w");
		if (!log_file)
			fprintf(stderr, "libopae-c (accelhost): cannot open LIBOPAE_LOGFILE %s\n", file);
	}
	if (!log_file)
		log_file = stdout;
}

void accelhost_opae_print(int loglevel, const char *fmt, ...)
{
	va_list args;
	FILE *out;

	if (!fmt)
		return;
	pthread_once(&log_once, log_init);
	if (loglevel > log_level)
		return;
	out = loglevel == 0 ? stderr : log_file;
	va_start(args, fmt);
	pthread_mutex_lock(&log_lock);
	vfprintf(out, fmt, args);
	fflush(out);
	pthread_mutex_unlock(&log_lock);
	va_end(args);
}
