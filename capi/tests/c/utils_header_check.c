/* OPAE's <opae/utils.h> includes <stdio.h> in every release (0.9 to 2.14), and OPAE's own
 * programs (object_api, argsfilter, fpgainfo) print to stdout and stderr relying on it. */
#include <opae/utils.h>

int main(void)
{
	fprintf(stderr, "utils_header_check: stderr is declared\n");
	printf("utils_header_check: FPGA_OK is \"%s\"\n", fpgaErrStr(FPGA_OK));
	return 0;
}
