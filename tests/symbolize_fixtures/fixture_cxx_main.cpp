// SPDX-License-Identifier: Apache-2.0
#include "fixture_cxx.h"

int main(int argc, char **)
{
	symfix::outer::Widget w{argc};

	return w.frob(argc) + symfix::twice<int>(argc) + (int)symfix::twice<long>(argc) == 0;
}
