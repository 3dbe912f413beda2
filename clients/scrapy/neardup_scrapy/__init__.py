"""neardup_scrapy: a Scrapy downloader middleware that drops pages a neardup service calls duplicates."""
from neardup_scrapy.middleware import NeardupMiddleware, ServiceError

__all__ = ["NeardupMiddleware", "ServiceError"]
