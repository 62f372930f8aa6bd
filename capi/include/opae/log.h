/* accelhost's OPAE-compatible C API: OPAE's logging function and macros. */
#ifndef __OPAE_LOG_H__
#define __OPAE_LOG_H__

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <opae/types.h>

/* Message levels: a message prints when its level is at most the LIBOPAE_LOG environment
 * variable's value (default OPAE_LOG_ERROR). Errors go to stderr; the others to
 * LIBOPAE_LOGFILE (a relative path, or one under /tmp/) or stdout. */
enum opae_loglevel {
	OPAE_LOG_ERROR = 0,
	OPAE_LOG_MESSAGE,
	OPAE_LOG_DEBUG
};

#define OPAE_DEFAULT_LOGLEVEL OPAE_LOG_ERROR

#ifdef __cplusplus
extern "C" {
#endif

/* Prints a printf-style message at `loglevel`. */
void opae_print(int loglevel, const char *fmt, ...);

/* The file name of `path` without its folders (what __SHORT_FILE__ gives). */
static inline const char *opae_short_file_name(const char *path)
{
	const char *name = path;
	const char *p;

	for (p = path; *p; ++p)
		if (*p == '/' || *p == '\\')
			name = p + 1;
	return name;
}

#ifdef __cplusplus
}
#endif

#ifdef __SHORT_FILE__
#undef __SHORT_FILE__
#endif
#define __SHORT_FILE__ opae_short_file_name(__FILE__)

/* file:line:function() prefixes, as OPAE's macros print them. */
#ifdef OPAE_MSG
#undef OPAE_MSG
#endif
#define OPAE_MSG(format, ...)                                                          \
	opae_print(OPAE_LOG_MESSAGE, "%s:%u:%s() : " format "\n", __SHORT_FILE__,      \
		   (unsigned)__LINE__, __func__, ##__VA_ARGS__)

#ifdef OPAE_ERR
#undef OPAE_ERR
#endif
#define OPAE_ERR(format, ...)                                                          \
	opae_print(OPAE_LOG_ERROR, "%s:%u:%s() **ERROR** : " format "\n",              \
		   __SHORT_FILE__, (unsigned)__LINE__, __func__, ##__VA_ARGS__)

/* Debug messages only when the program defines LIBOPAE_DEBUG. */
#ifdef OPAE_DBG
#undef OPAE_DBG
#endif
#ifdef LIBOPAE_DEBUG
#define OPAE_DBG(format, ...)                                                          \
	opae_print(OPAE_LOG_DEBUG, "%s:%u:%s() *DEBUG* : " format "\n",                \
		   __SHORT_FILE__, (unsigned)__LINE__, __func__, ##__VA_ARGS__)
#else
#define OPAE_DBG(format, ...)                                                          \
	{                                                                              \
	}
#endif

#endif /* __OPAE_LOG_H__ */
