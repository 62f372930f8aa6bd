/*
 * OPAE's logging from C: OPAE_ERR always prints (stderr), OPAE_MSG only with LIBOPAE_LOG >= 1
 * (stdout, or LIBOPAE_LOGFILE), opae_print at debug level only with LIBOPAE_LOG >= 2. The
 * test runs it under each setting and reads where the lines went.
 */
#include <opae/fpga.h>

int main(void)
{
	int value = 42;

	OPAE_ERR("an error with %d and %s", value, "text");
	OPAE_MSG("a message with %.2f", 2.5);
	opae_print(OPAE_LOG_DEBUG, "a debug line %d %d %d %d %d %d %d\n", 1, 2, 3, 4, 5, 6, 7);
	OPAE_DBG("never without LIBOPAE_DEBUG %d", value);
	opae_print(OPAE_LOG_ERROR, NULL);
	return 0;
}
