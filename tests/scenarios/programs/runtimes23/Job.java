import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.*;

/** One JVM job per mode: what a batch job does at start (config, port, native library, files). */
public class Job {
    public static void main(String[] a) throws Exception {
        Path base = Paths.get(a[1]);
        switch (a[0]) {
            case "conf": {  // read a properties file, write a summary
                Properties p = new Properties();
                try (InputStream in = Files.newInputStream(base.resolve("conf/app.properties"))) { p.load(in); }
                Files.writeString(base.resolve("out/summary.txt"), "threads=" + p.getProperty("threads") + "\n");
                break;
            }
            case "serve": {  // bind the service port, answer one client of our own, stop
                int port = Integer.parseInt(Files.readString(base.resolve("port")).trim());
                try (ServerSocket s = new ServerSocket()) {
                    s.bind(new InetSocketAddress("127.0.0.1", port));
                    try (Socket c = new Socket("127.0.0.1", port); Socket d = s.accept()) { c.getOutputStream().write(1); d.getInputStream().read(); }
                }
                break;
            }
            case "jni": {  // load the job's native library (java.library.path)
                System.loadLibrary("tb23");
                Files.writeString(base.resolve("out/native.txt"), "loaded\n");
                break;
            }
            case "files": {  // open every shard at once (a merge), then close them
                List<InputStream> open = new ArrayList<>();
                try (DirectoryStream<Path> ds = Files.newDirectoryStream(base.resolve("data"))) {
                    List<Path> names = new ArrayList<>(); ds.forEach(names::add); Collections.sort(names);
                    for (Path p : names) open.add(Files.newInputStream(p));
                }
                long n = 0; for (InputStream in : open) { n += in.readAllBytes().length; in.close(); }
                Files.writeString(base.resolve("out/merged.txt"), n + "\n");
                break;
            }
            case "tmp": {  // scratch files in java.io.tmpdir (random names), removed at the end
                for (int i = 0; i < 5; i++) {
                    File f = File.createTempFile("job", ".tmp");
                    try (FileOutputStream o = new FileOutputStream(f)) { o.write(new byte[4096]); }
                    f.delete();
                }
                break;
            }
            case "write": {  // write the result (a few hundred KiB) under out/
                byte[] buf = new byte[64 * 1024];
                Arrays.fill(buf, (byte) 'x');
                try (OutputStream o = Files.newOutputStream(base.resolve("out/result.bin"))) { for (int i = 0; i < 6; i++) o.write(buf); }
                break;
            }
            case "mkdir": {  // a run directory under a dated parent the job expects to exist
                Files.createDirectory(base.resolve("runs/2026/run-001"));
                Files.writeString(base.resolve("runs/2026/run-001/started"), "yes\n");
                break;
            }
            case "move": {  // publish: stage, then an atomic rename into place
                Path staged = base.resolve("stage/report.txt");
                Files.writeString(staged, "report\n");
                Files.move(staged, base.resolve("pub/report.txt"), StandardCopyOption.ATOMIC_MOVE);
                break;
            }
            case "classpath": {  // the main class needs a helper from the second jar
                Class<?> c = Class.forName("tb23.Util");
                Files.writeString(base.resolve("out/cp.txt"), c.getMethod("hello").invoke(null) + "\n");
                break;
            }
            case "pool": {  // eight workers, each writing its part; completion order varies
                ExecutorService ex = Executors.newFixedThreadPool(8);
                List<Future<?>> fs = new ArrayList<>();
                for (int i = 0; i < 16; i++) {
                    final int k = i;
                    fs.add(ex.submit(() -> { long h = 0; for (int j = 0; j < 200000 * (1 + k % 3); j++) h = h * 31 + j;
                        Files.writeString(base.resolve("out/part" + k), h + "\n"); return null; }));
                }
                for (Future<?> f : fs) f.get();
                ex.shutdown();
                break;
            }
            case "churn": {  // allocation churn: the GC runs a varying number of times
                List<byte[]> keep = new ArrayList<>(); long sum = 0;
                for (int i = 0; i < 4000; i++) { byte[] b = new byte[64 * 1024]; b[i % b.length] = 1; keep.add(b); if (keep.size() > 100) keep.clear(); sum += b.length; }
                Files.writeString(base.resolve("out/churn.txt"), sum + "\n");
                break;
            }
            case "jit": {  // a hot loop long enough for the JIT's tiers to kick in at varying points
                long h = 0; long end = System.nanoTime() + 300_000_000L;
                while (System.nanoTime() < end) for (int j = 0; j < 10000; j++) h = h * 1103515245 + j;
                Files.writeString(base.resolve("out/jit.txt"), (h & 1) + "\n");
                break;
            }
            case "host": {  // what a job logs about its host: cpus, memory (cgroup and /proc)
                com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
                Files.writeString(base.resolve("out/host.txt"), Runtime.getRuntime().availableProcessors() + " " + os.getTotalMemorySize() + " " + ProcessHandle.current().pid() + "\n");
                break;
            }
            default: throw new IllegalArgumentException(a[0]);
        }
    }
}
