package cdcnorm.bench;

import java.io.ByteArrayInputStream;
import org.apache.avro.file.DataFileStream;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.spark.sql.api.java.UDF1;

/**
 * The cost of decoding an Avro container file in the JVM with Apache Avro's Java library (which pyspark ships:
 * `jars/avro-*.jar`), measured by benchmarks/java_avro_cost.py: every record of the file's bytes decoded into a
 * generic record and each field read once. A measurement, not a decoder: it returns the records and fields read.
 */
public class AvroRecords implements UDF1<byte[], Long> {
  @Override
  public Long call(byte[] file) throws Exception {
    if (file == null) return null;
    long fields = 0;
    try (DataFileStream<GenericRecord> stream =
        new DataFileStream<>(new ByteArrayInputStream(file), new GenericDatumReader<>())) {
      GenericRecord record = null;
      while (stream.hasNext()) {
        record = stream.next(record);
        int n = record.getSchema().getFields().size();
        for (int i = 0; i < n; i++) {
          if (record.get(i) != null) fields++;
        }
        fields += 1L << 32;  // one record: the high half counts records
      }
    }
    return fields;
  }
}
