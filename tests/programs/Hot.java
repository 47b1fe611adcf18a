// JIT workload for rperf tests: all time in Hot.hotJavaMethod.
public class Hot {
    static double hotJavaMethod(int n) { double s = 0; for (int i = 0; i < n; i++) s += Math.sqrt(i ^ 0x5a5a); return s; }
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + 2000; double t = 0;
        while (System.currentTimeMillis() < end) t += hotJavaMethod(100000);
        System.out.println(t > 0);
    }
}
