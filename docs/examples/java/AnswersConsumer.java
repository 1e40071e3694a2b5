import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Reads tracebound's answers with nothing but Apache Avro, the Kafka client and the
 * exported schema file (`tracebound schemas export DIR`).
 *
 * <p>Values are Avro single-object messages: C3 01, the schema's CRC-64-AVRO
 * fingerprint, the body. {@link BinaryMessageDecoder} checks that fingerprint against
 * the schema it was given, so a message written with any other schema is refused
 * rather than misread. {@code isolation.level=read_committed} hides the records of
 * aborted transactions: the pipeline writes every answer inside one.
 *
 * <p>Usage: {@code java AnswersConsumer BOOTSTRAP tracebound.Answer.avsc [TOPIC]}.
 * Prints every committed answer present now as one JSON line (run_id, verdict, text)
 * and exits; a service would subscribe with its own group.id and poll forever.
 */
public final class AnswersConsumer {
    private AnswersConsumer() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: AnswersConsumer BOOTSTRAP ANSWER_AVSC [TOPIC]");
            System.exit(2);
        }
        String topic = args.length > 2 ? args[2] : "tracebound.answers";
        Schema schema = new Schema.Parser().parse(new File(args[1]));
        BinaryMessageDecoder<GenericRecord> decoder =
                new BinaryMessageDecoder<>(GenericData.get(), schema);

        Properties config = new Properties();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);

        // Answers are in any language: print UTF-8 whatever the platform's default is.
        PrintStream out = new PrintStream(
                new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(30))) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            // Under read_committed the end offsets are the last stable offsets: the
            // answers of every transaction committed so far, and nothing undecided.
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            while (!reached(consumer, end)) {
                for (ConsumerRecord<String, byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    GenericRecord answer = decoder.decode(record.value());
                    out.println("{\"run_id\": " + quote(answer.get("run_id"))
                            + ", \"verdict\": " + quote(answer.get("verdict"))
                            + ", \"text\": " + quote(answer.get("user_facing_answer")) + "}");
                }
            }
        }
    }

    private static boolean reached(KafkaConsumer<String, byte[]> consumer,
                                   Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> entry : end.entrySet()) {
            if (consumer.position(entry.getKey()) < entry.getValue()) {
                return false;
            }
        }
        return true;
    }

    /** A JSON string literal (Avro strings arrive as Utf8; toString gives the text). */
    private static String quote(Object value) {
        String text = String.valueOf(value);
        StringBuilder out = new StringBuilder("\"");
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
