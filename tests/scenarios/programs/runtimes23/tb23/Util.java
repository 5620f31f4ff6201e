package tb23;
public class Util { public static String hello() { return "util"; } }
