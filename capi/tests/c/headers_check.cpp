// Every header of the C API, compiled as C++ (-std=c++17 -Wall -Wextra -Werror -pedantic by
// the tests), and a few calls made from C++: C++ applications and wrappers written against
// OPAE's headers build against accelhost's.
#include <opae/fpga.h>
#include <opae/accelhost.h>
#include <opae/access.h>
#include <opae/buffer.h>
#include <opae/enum.h>
#include <opae/hash_map.h>
#include <opae/event.h>
#include <opae/init.h>
#include <opae/log.h>
#include <opae/manage.h>
#include <opae/mmio.h>
#include <opae/properties.h>
#include <opae/types.h>
#include <opae/types_enum.h>
#include <opae/utils.h>
#include <opae/version.h>
#include <opae/error.h>
#include <opae/log.h>
#include <opae/metrics.h>
#include <opae/sysobject.h>
#include <opae/umsg.h>
#include <opae/userclk.h>

#include <cstdio>
#include <string>

int main()
{
	fpga_version version{};
	if (fpgaGetOPAECVersion(&version) != FPGA_OK)
		return 1;
	char text[FPGA_VERSION_STR_MAX];
	if (fpgaGetOPAECVersionString(text, sizeof(text)) != FPGA_OK)
		return 1;
	fpga_properties filter = nullptr;
	if (fpgaGetProperties(nullptr, &filter) != FPGA_OK)
		return 1;
	if (fpgaPropertiesSetObjectType(filter, FPGA_ACCELERATOR) != FPGA_OK)
		return 1;
	uint32_t matches = 0;
	if (fpgaEnumerate(&filter, 1, nullptr, 0, &matches) != FPGA_OK)
		return 1;
	fpgaDestroyProperties(&filter);
	fpgaFinalize();
	OPAE_MSG("from C++: %u accelerators", matches);
	std::printf("headers_check: C++ sees OPAE API %s (%s), %u accelerators\n",
		    std::string(text).c_str(), fpgaErrStr(FPGA_OK), matches);
	return matches > 0 ? 0 : 1;
}
