// SPDX-License-Identifier: Apache-2.0
// tests/daemon/unwind/unwind_java.sh: a hot call chain main -> alpha -> beta -> gamma that the JIT compiles,
// run for argv[0] seconds.
public class Hot {
    static long gamma(long x, int n) {
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            x ^= x >>> 29;
        }
        return x;
    }

    static long beta(long x) {
        long s = 0;
        for (int i = 0; i < 50; i++) s += gamma(x + i, 2000);
        return s;
    }

    static long alpha(long x) {
        long s = 0;
        for (int i = 0; i < 20; i++) s += beta(x + i);
        return s;
    }

    public static void main(String[] a) {
        long end = System.nanoTime() + (long) (Double.parseDouble(a.length > 0 ? a[0] : "4") * 1e9);
        long s = 0;
        while (System.nanoTime() < end) s += alpha(s);
        System.out.println(s);
    }
}
