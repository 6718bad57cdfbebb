"""What the storage tests do on their S3 server with boto3 (AWS's own client), not with patience:
make a bucket, put an object, read one back, list keys, remove one.

    s3_tool.py ENDPOINT mb BUCKET
    s3_tool.py ENDPOINT put BUCKET KEY FILE
    s3_tool.py ENDPOINT get BUCKET KEY      (the bytes on stdout; exit status 3 when missing)
    s3_tool.py ENDPOINT ls BUCKET           (KEY SIZE lines)
    s3_tool.py ENDPOINT uploads BUCKET      (the keys of multipart uploads going on)
    s3_tool.py ENDPOINT rm BUCKET KEY
    s3_tool.py ENDPOINT user NAME ACTION[,ACTION...]
        (an IAM user allowed those actions on everything; its access key id and secret on stdout)

Its own credentials are S3_TOOL_KEY_ID and S3_TOOL_SECRET (default: moto's `testing`), for a
server that checks them (moto with INITIAL_NO_AUTH_ACTION_COUNT).
"""

import json
import os
import sys

import boto3
import botocore.exceptions


def main():
    endpoint, command, bucket, *rest = sys.argv[1:]

    def client(service):
        return boto3.client(
            service,
            endpoint_url=endpoint,
            aws_access_key_id=os.environ.get("S3_TOOL_KEY_ID", "testing"),
            aws_secret_access_key=os.environ.get("S3_TOOL_SECRET", "testing"),
            region_name="us-east-1",
        )

    s3 = client("s3")
    if command == "user":
        # Three IAM calls: a server counting unauthenticated calls counts three.
        (actions,) = rest
        iam = client("iam")
        iam.create_user(UserName=bucket)
        key = iam.create_access_key(UserName=bucket)["AccessKey"]
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": actions.split(","), "Resource": "*"}],
        }
        iam.put_user_policy(UserName=bucket, PolicyName="test", PolicyDocument=json.dumps(policy))
        print(key["AccessKeyId"], key["SecretAccessKey"])
    elif command == "mb":
        s3.create_bucket(Bucket=bucket)
    elif command == "put":
        key, path = rest
        s3.upload_file(path, bucket, key)
    elif command == "get":
        (key,) = rest
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except botocore.exceptions.ClientError as e:
            if e.response["Error"]["Code"] == "NoSuchKey":
                sys.exit(3)
            raise
        sys.stdout.buffer.write(body)
    elif command == "ls":
        for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
            print(item["Key"], item["Size"])
    elif command == "uploads":
        for upload in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            print(upload["Key"])
    elif command == "rm":
        (key,) = rest
        s3.delete_object(Bucket=bucket, Key=key)
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
