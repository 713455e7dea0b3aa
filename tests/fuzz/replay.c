/*
 * replay.c - run a fuzz target over every file of the given corpus folders, without libFuzzer:
 * the regression run of the normal test suite (and of the sanitizer build).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (buf == NULL || got != (size_t)n) {
        free(buf);
        return -1;
    }
    /* exact-size copy so a sanitizer sees any read past the input */
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        DIR *dir = opendir(argv[i]);
        if (dir == NULL) {
            fprintf(stderr, "replay: cannot open %s\n", argv[i]);
            return 1;
        }
        struct dirent *e;
        char path[4096];
        while ((e = readdir(dir)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            if (run_file(path) != 0) {
                fprintf(stderr, "replay: cannot read %s\n", path);
                closedir(dir);
                return 1;
            }
            files++;
        }
        closedir(dir);
    }
    printf("replayed %d inputs\n", files);
    return files > 0 ? 0 : 1;
}
