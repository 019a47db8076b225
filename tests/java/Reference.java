// Reference.java: an independent Java implementation of busca's "java" TF-IDF profile.
//
// It follows the article in the seed (dividir, cosseno) and is the yardstick that
// tests/test_parity.py compares busca's Python implementation against.
//
//   words    texto.trim().split("\\s+"); a blank text has no words
//   windows  starts 0, size-overlap, 2(size-overlap), ...; up to `size` words each;
//            stop after the window that reaches the last word; text = words joined by " "
//   terms    chunk.toLowerCase(Locale.ROOT), then every maximal match of [\p{L}\p{N}]+
//   weights  raw count in the chunk * ln(N / df)   (N chunks, df chunks containing the term)
//   query    same terms, tf * corpus idf, unknown terms ignored
//   score    cosseno(query, chunk): dot / (normA * normB), 0 when a norm is 0
//   top-k    score descending, ties by chunk order; only scores > 0
//
// Usage:
//   javac -d OUT Reference.java
//   java -cp OUT Reference CORPUS QUERIES [--size 200] [--overlap 40] [--k 3] [--dump]
//
// CORPUS and QUERIES are UTF-8 files with one document (one query) per line; inside a
// line, backslash, LF, CR and TAB are written as the two-character escapes \\ \n \r \t.
// Chunks are numbered 0..N-1 in document order, then window order.
//
// Output (UTF-8):
//   chunks N
//   vocabulary V
//   chunk I ESCAPED_TEXT            (with --dump, one line per chunk)
//   term DF ESCAPED_TERM            (with --dump, one line per vocabulary term, any order)
//   query Q [ID SCORE]...           (one line per query, up to k hits, Double.toString)

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public final class Reference {

    private static final Pattern TERM = Pattern.compile("[\\p{L}\\p{N}]+");

    private Reference() {
    }

    static List<String> palavras(String texto) {
        String limpo = texto.trim();
        if (limpo.isEmpty()) {
            return new ArrayList<>();
        }
        return Arrays.asList(limpo.split("\\s+"));
    }

    static List<String> dividir(String texto, int tamanho, int sobreposicao) {
        List<String> todas = palavras(texto);
        List<String> pedacos = new ArrayList<>();
        for (int inicio = 0; inicio < todas.size(); inicio += tamanho - sobreposicao) {
            int fim = Math.min(inicio + tamanho, todas.size());
            pedacos.add(String.join(" ", todas.subList(inicio, fim)));
            if (fim == todas.size()) break;
        }
        return pedacos;
    }

    static List<String> termos(String texto) {
        List<String> saida = new ArrayList<>();
        Matcher m = TERM.matcher(texto.toLowerCase(Locale.ROOT));
        while (m.find()) {
            saida.add(m.group());
        }
        return saida;
    }

    static Map<String, Integer> contar(String texto) {
        Map<String, Integer> tf = new LinkedHashMap<>();
        for (String t : termos(texto)) {
            tf.merge(t, 1, Integer::sum);
        }
        return tf;
    }

    static Map<String, Double> pesar(Map<String, Integer> tf, Map<String, Double> idf) {
        Map<String, Double> v = new HashMap<>();
        for (var e : tf.entrySet()) {
            Double w = idf.get(e.getKey());
            if (w != null) {
                v.put(e.getKey(), e.getValue() * w);
            }
        }
        return v;
    }

    static double cosseno(Map<String, Double> a, Map<String, Double> b) {
        double produto = 0;
        for (var e : a.entrySet()) produto += e.getValue() * b.getOrDefault(e.getKey(), 0.0);
        double normaA = Math.sqrt(a.values().stream().mapToDouble(v -> v * v).sum());
        double normaB = Math.sqrt(b.values().stream().mapToDouble(v -> v * v).sum());
        return normaA == 0 || normaB == 0 ? 0 : produto / (normaA * normaB);
    }

    static String unescape(String line, Path file, int lineNo) {
        StringBuilder sb = new StringBuilder(line.length());
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            if (i + 1 >= line.length()) {
                throw new IllegalArgumentException(file + ":" + lineNo + ": dangling backslash");
            }
            char n = line.charAt(++i);
            switch (n) {
                case '\\' -> sb.append('\\');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                default -> throw new IllegalArgumentException(
                        file + ":" + lineNo + ": unknown escape \\" + n);
            }
        }
        return sb.toString();
    }

    static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t");
    }

    static List<String> readLines(Path file) throws IOException {
        List<String> out = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            int lineNo = 0;
            while ((line = r.readLine()) != null) {
                out.add(unescape(line, file, ++lineNo));
            }
        }
        return out;
    }

    static Integer[] topK(double[] scores, int k) {
        List<Integer> ids = new ArrayList<>();
        for (int i = 0; i < scores.length; i++) {
            if (scores[i] > 0) ids.add(i);
        }
        ids.sort((x, y) -> {
            int c = Double.compare(scores[y], scores[x]);
            return c != 0 ? c : Integer.compare(x, y);
        });
        return ids.subList(0, Math.min(k, ids.size())).toArray(new Integer[0]);
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: java Reference CORPUS QUERIES [--size N] [--overlap N] [--k N] [--dump]");
            System.exit(2);
        }
        int size = 200, overlap = 40, k = 3;
        boolean dump = false;
        for (int i = 2; i < args.length; i++) {
            switch (args[i]) {
                case "--size" -> size = Integer.parseInt(args[++i]);
                case "--overlap" -> overlap = Integer.parseInt(args[++i]);
                case "--k" -> k = Integer.parseInt(args[++i]);
                case "--dump" -> dump = true;
                default -> {
                    System.err.println("unknown option: " + args[i]);
                    System.exit(2);
                }
            }
        }
        if (size < 1 || overlap < 0 || overlap >= size || k < 1) {
            System.err.println("need size >= 1, 0 <= overlap < size, k >= 1");
            System.exit(2);
        }

        List<String> chunks = new ArrayList<>();
        for (String doc : readLines(Path.of(args[0]))) {
            chunks.addAll(dividir(doc, size, overlap));
        }
        List<String> queries = readLines(Path.of(args[1]));

        int n = chunks.size();
        List<Map<String, Integer>> counts = new ArrayList<>(n);
        Map<String, Integer> df = new HashMap<>();
        for (String chunk : chunks) {
            Map<String, Integer> tf = contar(chunk);
            counts.add(tf);
            for (String t : tf.keySet()) df.merge(t, 1, Integer::sum);
        }
        Map<String, Double> idf = new HashMap<>();
        for (var e : df.entrySet()) idf.put(e.getKey(), Math.log((double) n / e.getValue()));
        List<Map<String, Double>> vectors = new ArrayList<>(n);
        for (Map<String, Integer> tf : counts) vectors.add(pesar(tf, idf));

        PrintWriter out = new PrintWriter(new OutputStreamWriter(
                new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8));
        out.println("chunks " + n);
        out.println("vocabulary " + df.size());
        if (dump) {
            for (int i = 0; i < n; i++) out.println("chunk " + i + " " + escape(chunks.get(i)));
            for (var e : df.entrySet()) out.println("term " + e.getValue() + " " + escape(e.getKey()));
        }
        for (int q = 0; q < queries.size(); q++) {
            Map<String, Double> query = pesar(contar(queries.get(q)), idf);
            double[] scores = new double[n];
            for (int i = 0; i < n; i++) scores[i] = cosseno(query, vectors.get(i));
            StringBuilder line = new StringBuilder("query ").append(q);
            for (int id : topK(scores, k)) {
                line.append(' ').append(id).append(' ').append(Double.toString(scores[id]));
            }
            out.println(line);
        }
        out.flush();
    }
}
